-- The text of the conversation's text parts, indexed for substring search (GET /session/search).
-- The trigram tokenizer makes LIKE '%word%' an index lookup; triggers keep it equal to parts.
CREATE VIRTUAL TABLE part_text USING fts5 (text, tokenize = 'trigram');

INSERT INTO part_text (rowid, text)
SELECT rowid, json_extract(CAST(data AS TEXT), '$.text') FROM parts
WHERE json_extract(CAST(data AS TEXT), '$.type') = 'text';

CREATE TRIGGER part_text_insert AFTER INSERT ON parts
WHEN json_extract(CAST(new.data AS TEXT), '$.type') = 'text'
BEGIN
    INSERT INTO part_text (rowid, text) VALUES (new.rowid, json_extract(CAST(new.data AS TEXT), '$.text'));
END;

CREATE TRIGGER part_text_update AFTER UPDATE OF data ON parts
BEGIN
    DELETE FROM part_text WHERE rowid = old.rowid;
    INSERT INTO part_text (rowid, text)
    SELECT new.rowid, json_extract(CAST(new.data AS TEXT), '$.text')
    WHERE json_extract(CAST(new.data AS TEXT), '$.type') = 'text';
END;

CREATE TRIGGER part_text_delete AFTER DELETE ON parts
BEGIN
    DELETE FROM part_text WHERE rowid = old.rowid;
END;
