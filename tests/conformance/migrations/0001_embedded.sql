-- Embedded at compile time by embed_migrations! (tests/conformance/migrate.rs).
CREATE TABLE m_embedded (id BIGINT PRIMARY KEY, note VARCHAR(20));
INSERT INTO m_embedded (id, note) VALUES (1, 'one;');
