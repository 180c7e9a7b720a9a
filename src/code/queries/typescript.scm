; TypeScript and TSX, after ecma.scm.

(abstract_class_declaration name: (type_identifier) @name) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (_) @name) @definition.module
(module name: (_) @name) @definition.module
(function_signature name: (identifier) @name) @definition.function
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(property_signature name: (_) @name) @definition.field
(public_field_definition name: (_) @name) @definition.field
(enum_body (property_identifier) @name @definition.enum_member)
(enum_body (enum_assignment name: (property_identifier) @name) @definition.enum_member)
; `declare const X: T;` and `export declare const X: T;` at top level
(program (ambient_declaration (lexical_declaration "const" (variable_declarator name: (identifier) @name))) @definition.constant)
(program (export_statement (ambient_declaration (lexical_declaration "const" (variable_declarator name: (identifier) @name)))) @definition.constant)
(ambient_declaration) @wrapper

(type_identifier) @identifier
