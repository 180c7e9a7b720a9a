; Go. Captures as in python.scm. A method's parent is its receiver's type.

(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @parent
        (pointer_type (type_identifier) @parent)
        (generic_type type: (type_identifier) @parent)
        (pointer_type (generic_type type: (type_identifier) @parent))
      ]))
  name: (field_identifier) @name) @definition.method
(method_declaration name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(const_spec name: (identifier) @name) @definition.constant
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(field_declaration name: (field_identifier) @name) @definition.field
(method_elem name: (field_identifier) @name) @definition.method

(type_declaration) @wrapper.single
(const_declaration) @wrapper.single
(var_declaration) @wrapper.single
(comment) @leading

(import_declaration) @import

(identifier) @identifier
(field_identifier) @identifier
(type_identifier) @identifier
(package_identifier) @identifier
(interpreted_string_literal) @exclude
(raw_string_literal) @exclude
(rune_literal) @exclude
