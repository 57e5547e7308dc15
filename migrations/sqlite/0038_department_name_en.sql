-- A department's name in English beside its name (issue 63): pages in English show it, when the file gives one.
ALTER TABLE departments ADD COLUMN name_en TEXT;
