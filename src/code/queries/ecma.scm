; What JavaScript, TypeScript and their JSX dialects share. Captures as in
; python.scm; each dialect adds its own file.

(class_declaration name: (_) @name) @definition.class
(class name: (_) @name) @definition.class
(method_definition name: (property_identifier) @name (#eq? @name "constructor")) @definition.constructor
(method_definition name: (_) @name) @definition.method
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function
(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function
; The ES5 class idiom, `X.prototype.m = function () {..}` (anywhere: it
; is often inside an IIFE): a method of X.
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (member_expression object: (identifier) @parent property: (property_identifier) @_prototype)
      property: (property_identifier) @name)
    right: [(function_expression) (arrow_function) (generator_function)])
  (#eq? @_prototype "prototype")) @definition.method
; A function exported by assignment, anywhere (CommonJS builds often put
; `exports.f = function` inside an `if` or a wrapper function).
(expression_statement
  (assignment_expression
    left: (member_expression
      object: [(identifier) @_exports (member_expression property: (property_identifier) @_exports)]
      property: (property_identifier) @name)
    right: [(function_expression) (arrow_function) (generator_function)])
  (#eq? @_exports "exports")) @definition.function
; A function assigned to a name declared before (`var f; .. f = function
; () {..}`), anywhere.
(expression_statement
  (assignment_expression
    left: (identifier) @name
    right: [(function_expression) (arrow_function) (generator_function)])) @definition.function
; A class held by a variable (`var Hono = class extends Base {..}`).
(lexical_declaration (variable_declarator name: (identifier) @name value: (class))) @definition.class
(variable_declaration (variable_declarator name: (identifier) @name value: (class))) @definition.class
; A function assigned to a property at top level (`exports.f = function`,
; `module.exports.f = ..`, `Field.d = function ..`).
(program
  (expression_statement
    (assignment_expression
      left: (member_expression property: (property_identifier) @name)
      right: [(function_expression) (arrow_function) (generator_function)])) @definition.function)
(program (lexical_declaration "const" (variable_declarator name: (identifier) @name)) @definition.constant)
(program (export_statement (lexical_declaration "const" (variable_declarator name: (identifier) @name)) @definition.constant))
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name)) @definition.variable)

(export_statement) @wrapper
(comment) @leading
(decorator) @leading

(import_statement) @import

(identifier) @identifier
(property_identifier) @identifier
(shorthand_property_identifier) @identifier
(shorthand_property_identifier_pattern) @identifier
(private_property_identifier) @identifier
(string) @exclude
(template_string) @exclude
(regex) @exclude
