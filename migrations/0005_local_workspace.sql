-- The local workspace (development only, src/workspace/local): its people, channels, members,
-- threads, thread notes and each user's inbox of cards. Slack deployments leave these empty.
CREATE TABLE workspace_users (
  team_id     TEXT NOT NULL,
  id          TEXT NOT NULL,
  name        TEXT NOT NULL,
  admin       INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, id)
);

CREATE TABLE workspace_channels (
  team_id     TEXT NOT NULL,
  id          TEXT NOT NULL,
  name        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, id)
);

CREATE TABLE workspace_members (
  team_id     TEXT NOT NULL,
  channel_id  TEXT NOT NULL,
  user_id     TEXT NOT NULL,
  added_at    INTEGER NOT NULL,
  PRIMARY KEY (team_id, channel_id, user_id),
  FOREIGN KEY (team_id, channel_id) REFERENCES workspace_channels (team_id, id) ON DELETE CASCADE,
  FOREIGN KEY (team_id, user_id) REFERENCES workspace_users (team_id, id) ON DELETE CASCADE
);

CREATE TABLE workspace_threads (
  team_id     TEXT NOT NULL,
  channel_id  TEXT NOT NULL,
  thread_ts   TEXT NOT NULL,
  started_by  TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (team_id, channel_id, thread_ts),
  FOREIGN KEY (team_id, channel_id) REFERENCES workspace_channels (team_id, id) ON DELETE CASCADE
);
CREATE INDEX workspace_threads_by_age ON workspace_threads (team_id, created_at);

CREATE TABLE workspace_notes (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  team_id     TEXT NOT NULL,
  channel_id  TEXT NOT NULL,
  thread_ts   TEXT NOT NULL,
  text        TEXT NOT NULL,
  at          INTEGER NOT NULL,
  FOREIGN KEY (team_id, channel_id, thread_ts) REFERENCES workspace_threads (team_id, channel_id, thread_ts) ON DELETE CASCADE
);
CREATE INDEX workspace_notes_by_thread ON workspace_notes (team_id, channel_id, thread_ts, id);

-- One card in one user's inbox. card_json is the card model (src/cards/card.ts), validated when
-- read back; subject_json what a consent card's Continue needs (service, thread). An approval
-- card's arguments are replaced by the settled card once it is answered or expires.
CREATE TABLE workspace_inbox (
  id            TEXT PRIMARY KEY,
  team_id       TEXT NOT NULL,
  user_id       TEXT NOT NULL,
  at            INTEGER NOT NULL,
  kind          TEXT NOT NULL,
  card_json     TEXT NOT NULL,
  approval_id   TEXT,
  subject_json  TEXT,
  state         TEXT NOT NULL CHECK (state IN ('open', 'settled'))
);
CREATE INDEX workspace_inbox_by_user ON workspace_inbox (team_id, user_id, at);
CREATE INDEX workspace_inbox_by_approval ON workspace_inbox (approval_id) WHERE approval_id IS NOT NULL;
