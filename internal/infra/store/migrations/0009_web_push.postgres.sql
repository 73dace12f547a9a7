-- Web Push: the server's VAPID key pair, generated once, and the browsers subscribed to it.
CREATE TABLE push_vapid (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    private_key BYTEA NOT NULL,
    created     BIGINT NOT NULL
);

CREATE TABLE push_subscriptions (
    endpoint   TEXT COLLATE "C" PRIMARY KEY,
    p256dh     TEXT COLLATE "C" NOT NULL,
    auth       TEXT COLLATE "C" NOT NULL,
    user_agent TEXT COLLATE "C" NOT NULL,
    created    BIGINT NOT NULL
);
