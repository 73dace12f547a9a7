-- A grant allows (an "always" answer) or denies (a "deny-always" answer) what its pattern matches.
ALTER TABLE permission_grants ADD COLUMN action TEXT NOT NULL DEFAULT 'allow';
