; C. Captures as in python.scm. A declaration of a function without its
; body is a prototype.

; The name is right before the parameters: a macro before the return
; type (`static INLINE_MACRO T name(args)`) makes the grammar read the
; return type as the name and the name as an error between them.
(function_definition declarator: (function_declarator declarator: (identifier) @name . parameters: (_)) body: (_)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name . parameters: (_))) body: (_)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name . parameters: (_)))) body: (_)) @definition.function
(function_definition declarator: (function_declarator declarator: (identifier) . (ERROR . (identifier) @name .) . parameters: (_)) body: (_)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) . (ERROR . (identifier) @name .) . parameters: (_))) body: (_)) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name . parameters: (_))) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name . parameters: (_)))) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name . parameters: (_))))) @definition.prototype
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
; A typedef's names are the innermost identifiers of its declarators
; (each one a definition: `typedef struct S S, *SPtr;`): `T`, `*T`,
; `**T`, `T[N]`, `T(args)` (a function type), `*T(args)`, `(T)(args)`,
; `(*T)(args)`, and `*(*T)(args)`, `**(*T)(args)` (pointers to functions
; returning pointers). The grammar reads a few standard names (`size_t`,
; `ssize_t`, `int8_t`..) as primitive types even where they are declared.
; Not `typedef R (CALLCONV NAME)(args)` with a type name for R (below).
((type_definition declarator: [
  (type_identifier) @name
  (primitive_type) @name
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
 (#not-match? @definition.type "^typedef\\s+\\w+\\s*[(]\\s*\\w+\\s+\\w+\\s*[)]")
 (#not-eq? @name "__attribute__"))
; An attribute (or a macro for one) between the type and the name
; (`typedef int __bitwise __sum16;`, `typedef T __attribute__((..)) u32;`):
; the grammar reads it as the declarator and the name as an error after it.
(type_definition declarator: (_) . (ERROR . (identifier) @name .)) @definition.type
; `typedef void (CALLCONV NAME)(args)` (GLES's `GL_APIENTRYP`): the
; grammar reads the macro as an error before the name.
(type_definition declarator: (function_declarator declarator: (parenthesized_declarator (ERROR) . (type_identifier) @name))) @definition.type
; `typedef R (CALLCONV NAME)(args)` with a macro for the calling
; convention and the `*` (EGL's `EGLAPIENTRYP`): the grammar reads it as
; a macro type `R(NAME)` with an error inside (`macro_type_specifier`, a
; C node the C++ grammar lacks: `_` here), and the parameters as
; declarators.
(type_definition type: (_ (ERROR) type: (type_descriptor type: (type_identifier) @name))) @definition.type
(type_definition (ERROR . (_ (ERROR) type: (type_descriptor type: (type_identifier) @name)))) @definition.type
; A macro with no semicolon before a typedef (`DECLARE_ASN1_FUNCTIONS(X)`,
; `__BEGIN_DECLS`, `PR_BEGIN_EXTERN_C`) swallows the `typedef` keyword as
; its declarator: the declaration after it is the typedef.
((declaration declarator: (identifier) @_typedef)
 .
 (declaration declarator: [
   (identifier) @name
   (pointer_declarator declarator: (identifier) @name)
   (pointer_declarator declarator: (pointer_declarator declarator: (identifier) @name))
   (array_declarator declarator: (identifier) @name)
 ]) @definition.type
 (#eq? @_typedef "typedef"))
(enumerator name: (identifier) @name) @definition.enum_member
(field_declaration declarator: (field_identifier) @name) @definition.field
(field_declaration declarator: (pointer_declarator declarator: (field_identifier) @name)) @definition.field
(field_declaration declarator: (array_declarator declarator: (field_identifier) @name)) @definition.field
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
(translation_unit (declaration declarator: (identifier) @name) @definition.variable (#not-eq? @name "typedef"))

(comment) @leading

(preproc_include) @import

(identifier) @identifier
(field_identifier) @identifier
(type_identifier) @identifier
(string_literal) @exclude
(char_literal) @exclude
(system_lib_string) @exclude
