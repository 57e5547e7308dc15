-- Roles in departments (SPEC "People and roles"): staff and manager are held per department, as memberships;
-- auditor and admin stay organisation-wide in user_roles. Every user keeps exactly what they could do: each
-- staff or manager role they held, in each department they belonged to.
CREATE TABLE user_memberships (
    user_id       INTEGER NOT NULL REFERENCES users(id),
    department_id INTEGER NOT NULL REFERENCES departments(id),
    role          TEXT NOT NULL CHECK (role IN ('staff', 'manager')),
    PRIMARY KEY (user_id, department_id, role)
);
CREATE INDEX user_memberships_by_department ON user_memberships (department_id, role);

-- What a person held before, kept for an admin's review (cleared when an admin sets their memberships): those
-- whose manager role now counts in several departments (it came from roles × departments, perhaps not all of
-- it meant), and those who belonged to a department with no staff or manager role (which let them read its
-- operations, and no longer does).
ALTER TABLE users ADD COLUMN access_review_json TEXT;
UPDATE users SET access_review_json = json_object(
        'roles', (SELECT json_group_array(role) FROM (SELECT role FROM user_roles WHERE user_id = users.id ORDER BY role)),
        'departments', (SELECT json_group_array(code) FROM (SELECT d.code FROM user_departments ud
                         JOIN departments d ON d.id = ud.department_id WHERE ud.user_id = users.id ORDER BY d.code)))
    WHERE ((SELECT COUNT(*) FROM user_departments WHERE user_id = users.id) > 1
           AND EXISTS (SELECT 1 FROM user_roles WHERE user_id = users.id AND role = 'manager'))
       OR (EXISTS (SELECT 1 FROM user_departments WHERE user_id = users.id)
           AND NOT EXISTS (SELECT 1 FROM user_roles WHERE user_id = users.id AND role IN ('staff', 'manager')));

INSERT INTO user_memberships (user_id, department_id, role)
    SELECT r.user_id, ud.department_id, r.role FROM user_roles r JOIN user_departments ud ON ud.user_id = r.user_id
    WHERE r.role IN ('staff', 'manager');
DELETE FROM user_roles WHERE role IN ('staff', 'manager');
DROP TABLE user_departments;
