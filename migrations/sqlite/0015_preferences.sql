-- Each user's language and time zone for the pages (Japanese and Tokyo until they choose).
ALTER TABLE users ADD COLUMN language TEXT NOT NULL DEFAULT 'ja' CHECK (language IN ('ja', 'en'));
ALTER TABLE users ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'Asia/Tokyo';
