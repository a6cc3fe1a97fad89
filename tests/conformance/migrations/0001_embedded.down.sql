DROP TABLE m_embedded;
