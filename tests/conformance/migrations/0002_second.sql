INSERT INTO m_embedded (id, note) VALUES (2, 'two');
