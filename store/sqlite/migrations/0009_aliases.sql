-- Subjects by their other names: the rows of the built-in attribute alias,
-- a set whose members are names in the form words.Name gives, by tenant and
-- member (FactReader.SubjectsNamed). Partial: only alias rows are indexed.
CREATE INDEX facts_alias ON facts (tenant, member) WHERE attribute = 'alias';
