; Rust. Captures as in python.scm. An impl block is a definition of kind
; impl named after its type, so its functions are `Type/method`.

(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.union
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
; `impl T for &'a mut Type<X>`, `*const Type`, `dyn Trait` and `&str`
; are named after the type they are made of.
(impl_item
  type: [
    (type_identifier) @name
    (primitive_type) @name
    (generic_type type: (type_identifier) @name)
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
    (reference_type type: [
      (type_identifier) @name
      (primitive_type) @name
      (generic_type type: (type_identifier) @name)
      (scoped_type_identifier name: (type_identifier) @name)
      (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
      (dynamic_type trait: [
        (type_identifier) @name
        (generic_type type: (type_identifier) @name)
        (scoped_type_identifier name: (type_identifier) @name)
      ])
    ])
    (pointer_type type: [
      (type_identifier) @name
      (primitive_type) @name
      (generic_type type: (type_identifier) @name)
      (scoped_type_identifier name: (type_identifier) @name)
    ])
    (dynamic_type trait: [
      (type_identifier) @name
      (generic_type type: (type_identifier) @name)
      (scoped_type_identifier name: (type_identifier) @name)
      (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
    ])
  ]) @definition.impl
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.variable
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(field_declaration name: (field_identifier) @name) @definition.field
(enum_variant name: (identifier) @name) @definition.enum_member
(associated_type name: (type_identifier) @name) @definition.type

(attribute_item) @leading
(line_comment) @leading
(block_comment) @leading

(use_declaration) @import
(extern_crate_declaration) @import

(identifier) @identifier
(type_identifier) @identifier
(field_identifier) @identifier
(string_literal) @exclude
(raw_string_literal) @exclude
(char_literal) @exclude
