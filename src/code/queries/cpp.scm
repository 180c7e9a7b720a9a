; C++, after c.scm. A member function defined outside its class
; (`void Parser::parse()`) has that class as its parent.

(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(class_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.class
(struct_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.struct
; `class EXPORT_MACRO Name : Base {..}` (`V8_EXPORT`, `U_COMMON_API`):
; the grammar reads a function definition with no parameters returning
; `class EXPORT_MACRO` (no valid function has that shape), named Name
; (the base list an error after it), or named after the base with Name
; in an error before it.
(function_definition type: (class_specifier !body) . declarator: (identifier) @name body: (_)) @definition.class
(function_definition type: (struct_specifier !body) . declarator: (identifier) @name body: (_)) @definition.struct
(function_definition type: (class_specifier !body) . (ERROR . (identifier) @name) . declarator: (identifier) body: (_)) @definition.class
(function_definition type: (struct_specifier !body) . (ERROR . (identifier) @name) . declarator: (identifier) body: (_)) @definition.struct
(namespace_definition name: (namespace_identifier) @name) @definition.namespace
(alias_declaration name: (type_identifier) @name) @definition.type
; `X() = default;`, `T& operator=(const T&) = delete;`, `P::P() = default;`:
; declared, not written: prototypes (the method patterns below
; want a body).
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name))
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name))
    (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) (destructor_name) (operator_name)] @name))
  ]
  [(default_method_clause) (delete_method_clause)]) @definition.prototype
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (destructor_name) @name (operator_name) @name])) body: (_)) @definition.method
(function_definition
  declarator: (reference_declarator (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (operator_name) @name]))) body: (_)) @definition.method
(function_definition
  declarator: (pointer_declarator declarator: (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (operator_name) @name]))) body: (_)) @definition.method
; `A::B::f()` (a nested class, a class in a namespace): the innermost
; scope is the parent.
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
        name: [(identifier) @name (destructor_name) @name (operator_name) @name]))) body: (_)) @definition.method
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        name: (qualified_identifier
          scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
          name: [(identifier) @name (destructor_name) @name (operator_name) @name])))) body: (_)) @definition.method

(function_definition declarator: (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name) body: (_)) @definition.method
(function_definition declarator: (reference_declarator (function_declarator declarator: [(field_identifier) (operator_name)] @name)) body: (_)) @definition.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(field_identifier) (operator_name)] @name)) body: (_)) @definition.method
(field_declaration declarator: (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.prototype
(declaration declarator: (function_declarator declarator: [(destructor_name) (operator_name)] @name)) @definition.prototype

(template_declaration) @wrapper

(namespace_identifier) @identifier
(string_literal) @exclude
(raw_string_literal) @exclude
