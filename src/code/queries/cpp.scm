; C++, after c.scm. A member function defined outside its class
; (`void Parser::parse()`) has that class as its parent.

(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(class_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.class
(struct_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.struct
(namespace_definition name: (namespace_identifier) @name) @definition.namespace
(alias_declaration name: (type_identifier) @name) @definition.type
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (destructor_name) @name (operator_name) @name]))) @definition.method
(function_definition
  declarator: (reference_declarator (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (operator_name) @name])))) @definition.method
(function_definition
  declarator: (pointer_declarator declarator: (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) @name (operator_name) @name])))) @definition.method
; `A::B::f()` (a nested class, a class in a namespace): the innermost
; scope is the parent.
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
        name: [(identifier) @name (destructor_name) @name (operator_name) @name])))) @definition.method
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        name: (qualified_identifier
          scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
          name: [(identifier) @name (destructor_name) @name (operator_name) @name]))))) @definition.method
(function_definition declarator: (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.method
(function_definition declarator: (reference_declarator (function_declarator declarator: [(field_identifier) (operator_name)] @name))) @definition.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(field_identifier) (operator_name)] @name))) @definition.method
(field_declaration declarator: (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.prototype
(declaration declarator: (function_declarator declarator: [(destructor_name) (operator_name)] @name)) @definition.prototype

(template_declaration) @wrapper

(namespace_identifier) @identifier
(string_literal) @exclude
(raw_string_literal) @exclude
