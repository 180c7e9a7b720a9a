; C. Captures as in python.scm. A declaration of a function without its
; body is a prototype.

(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.prototype
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
; A typedef's name is the innermost identifier of its first declarator:
; `T`, `*T`, `**T`, `T[N]`, `T(args)` (a function type), `*T(args)`,
; `(T)(args)`, `(*T)(args)`, and `*(*T)(args)`, `**(*T)(args)` (pointers
; to functions returning pointers).
(type_definition declarator: [
  (type_identifier) @name
  (pointer_declarator declarator: (type_identifier) @name)
  (pointer_declarator declarator: (pointer_declarator declarator: (type_identifier) @name))
  (array_declarator declarator: (type_identifier) @name)
  (function_declarator declarator: [
    (type_identifier) @name
    (parenthesized_declarator (type_identifier) @name)
    (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name))
    (parenthesized_declarator (pointer_declarator declarator: (pointer_declarator declarator: (type_identifier) @name)))
  ])
  (pointer_declarator declarator: (function_declarator declarator: [
    (type_identifier) @name
    (parenthesized_declarator (type_identifier) @name)
    (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name))
  ]))
  (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator:
    (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))))
]) @definition.type
; The names after the first (`typedef struct S S, *SPtr;`): one
; definition per declarator node (the typedef's node holds the first).
(type_definition "," . [
  (type_identifier) @name
  (pointer_declarator declarator: (type_identifier) @name)
  (pointer_declarator declarator: (pointer_declarator declarator: (type_identifier) @name))
  (array_declarator declarator: (type_identifier) @name)
] @definition.type)
(enumerator name: (identifier) @name) @definition.enum_member
(field_declaration declarator: (field_identifier) @name) @definition.field
(field_declaration declarator: (pointer_declarator declarator: (field_identifier) @name)) @definition.field
(field_declaration declarator: (array_declarator declarator: (field_identifier) @name)) @definition.field
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
(translation_unit (declaration declarator: (identifier) @name) @definition.variable)

(comment) @leading

(preproc_include) @import

(identifier) @identifier
(field_identifier) @identifier
(type_identifier) @identifier
(string_literal) @exclude
(char_literal) @exclude
(system_lib_string) @exclude
