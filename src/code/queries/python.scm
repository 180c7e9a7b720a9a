; Python: which nodes are definitions, their kinds and names; imports;
; what is an identifier; and what is never an occurrence.
;
; Captures: @definition.<kind> the whole definition, @name its name,
; @parent a name that stands for the definition's parent when it is not
; the enclosing definition; @wrapper a node around a definition that
; belongs to it (decorators); @leading a node that belongs to the
; definition after it when nothing but a line break separates them;
; @import an import statement; @identifier a name token; @exclude a node
; whose identifiers are never occurrences (string literals).

(class_definition
  body: (block
    (function_definition name: (identifier) @name (#eq? @name "__init__")) @definition.constructor))
(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition name: (identifier) @name (#eq? @name "__init__")) @definition.constructor)))
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

(module (expression_statement (assignment left: (identifier) @name) @definition.variable))
(class_definition
  body: (block (expression_statement (assignment left: (identifier) @name) @definition.field)))

(decorated_definition) @wrapper
(comment) @leading

(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import

(identifier) @identifier
(string) @exclude
