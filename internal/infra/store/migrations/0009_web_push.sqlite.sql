-- Web Push: the server's VAPID key pair, generated once, and the browsers subscribed to it.
CREATE TABLE push_vapid (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    private_key BLOB NOT NULL,
    created     INTEGER NOT NULL
);

CREATE TABLE push_subscriptions (
    endpoint   TEXT PRIMARY KEY,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    user_agent TEXT NOT NULL,
    created    INTEGER NOT NULL
);
