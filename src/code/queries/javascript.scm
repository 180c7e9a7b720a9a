; JavaScript and JSX, after ecma.scm.

(field_definition property: (property_identifier) @name) @definition.field
