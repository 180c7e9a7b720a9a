use super::*;
use crate::code::lang;

/// (name path, kind, line) of every symbol of `text` as `lang`.
fn paths(lang: &str, text: &str) -> Vec<(String, &'static str, u32)> {
    let o = outline(lang::by_name(lang).unwrap(), text.as_bytes()).unwrap();
    (0..o.syms.len())
        .map(|i| (o.name_path(i), o.syms[i].kind, o.syms[i].line))
        .collect()
}

fn has(all: &[(String, &'static str, u32)], path: &str, kind: &str, line: u32) {
    assert!(
        all.iter()
            .any(|(p, k, l)| p == path && *k == kind && *l == line),
        "no {path} ({kind}) at line {line} in {all:#?}"
    );
}

#[test]
fn python_nested_classes_decorators_and_methods() {
    let src = "import os\nX = 1\n\n@dataclass\nclass Outer:\n    y: int = 2\n    z = 3\n    class Inner:\n        def m(self):\n            def local():\n                pass\n    def __init__(self):\n        pass\n    @property\n    def p(self):\n        return 1\n\nasync def run():\n    pass\n";
    let all = paths("python", src);
    has(&all, "X", "variable", 2);
    has(&all, "Outer", "class", 5);
    has(&all, "Outer/z", "field", 7);
    has(&all, "Outer/Inner", "class", 8);
    has(&all, "Outer/Inner/m", "method", 9);
    has(&all, "Outer/Inner/m/local", "function", 10);
    has(&all, "Outer/__init__", "constructor", 12);
    has(&all, "Outer/p", "method", 15);
    has(&all, "run", "function", 18);
    let o = outline(lang::by_name("python").unwrap(), src.as_bytes()).unwrap();
    let outer = o.syms.iter().find(|s| s.name == "Outer").unwrap();
    // the decorator belongs to the class
    assert_eq!(&src[outer.start..outer.start + 10], "@dataclass");
    assert!(!o.has_errors);
}

#[test]
fn rust_impl_blocks_traits_macros_and_attributes() {
    let src = "/// Docs.\n#[derive(Debug)]\npub struct Parser<T> { pos: usize, t: T }\n\nimpl<T> Parser<T> {\n    pub fn parse_expr(&self) -> u32 { 0 }\n}\n\ntrait Shape { fn area(&self) -> f64; }\nimpl Shape for Parser<u8> { fn area(&self) -> f64 { 1.0 } }\n\nmacro_rules! m { () => {} }\nenum E { A, B(u8) }\nconst C: u8 = 1;\nmod inner { fn f() {} }\n";
    let all = paths("rust", src);
    has(&all, "Parser", "struct", 3);
    has(&all, "Parser/pos", "field", 3);
    has(&all, "Parser", "impl", 5);
    has(&all, "Parser/parse_expr", "method", 6);
    has(&all, "Shape", "trait", 9);
    has(&all, "Shape/area", "method", 9);
    has(&all, "Parser/area", "method", 10);
    has(&all, "m", "macro", 12);
    has(&all, "E", "enum", 13);
    has(&all, "E/A", "enum_member", 13);
    has(&all, "C", "constant", 14);
    has(&all, "inner/f", "function", 15);
    let o = outline(lang::by_name("rust").unwrap(), src.as_bytes()).unwrap();
    let parser = &o.syms[0];
    assert_eq!(
        parser.lead, 0,
        "doc comment and attribute belong to the struct"
    );
    assert_eq!(
        parser.signature,
        "pub struct Parser<T> { pos: usize, t: T }"
    );
}

#[test]
fn typescript_interfaces_overloads_generics_and_exports() {
    let src = "export interface Shape { area(): number; name: string }\ntype Id<T> = T;\nexport function f(a: string): void;\nexport function f(a: number): void;\nexport function f(a: any) {}\nexport class Box<T> implements Shape {\n  constructor(private v: T) {}\n  area(): number { return 1 }\n  name = 'b';\n}\nenum Color { Red, Green = 2 }\nconst handler = (x: number) => x;\nnamespace NS { export const k = 1; }\n";
    let all = paths("typescript", src);
    has(&all, "Shape", "interface", 1);
    has(&all, "Shape/area", "method", 1);
    has(&all, "Shape/name", "field", 1);
    has(&all, "Id", "type", 2);
    assert_eq!(all.iter().filter(|(p, ..)| p == "f").count(), 3, "{all:?}");
    has(&all, "Box", "class", 6);
    has(&all, "Box/constructor", "constructor", 7);
    has(&all, "Box/area", "method", 8);
    has(&all, "Box/name", "field", 9);
    has(&all, "Color", "enum", 11);
    has(&all, "Color/Red", "enum_member", 11);
    has(&all, "Color/Green", "enum_member", 11);
    has(&all, "handler", "function", 12);
    has(&all, "NS", "module", 13);
}

#[test]
fn tsx_and_jsx_components() {
    let src = "export function App() {\n  return <div onClick={() => go()}><Child /></div>;\n}\nclass Child extends React.Component { render() { return <span/>; } }\n";
    for lang in ["tsx", "javascript"] {
        let all = paths(lang, src);
        has(&all, "App", "function", 1);
        has(&all, "Child", "class", 4);
        has(&all, "Child/render", "method", 4);
    }
}

#[test]
fn go_receivers_are_parents() {
    let src = "package p\n\nimport \"fmt\"\n\ntype Parser struct {\n\tpos int\n}\n\ntype Shape interface {\n\tArea() float64\n}\n\nfunc (p *Parser) Parse() error { return nil }\nfunc New[T any]() *Parser { return nil }\nconst Max = 3\nvar v = 1\n";
    let all = paths("go", src);
    has(&all, "Parser", "struct", 5);
    has(&all, "Parser/pos", "field", 6);
    has(&all, "Shape", "interface", 9);
    has(&all, "Shape/Area", "method", 10);
    has(&all, "Parser/Parse", "method", 13);
    has(&all, "New", "function", 14);
    has(&all, "Max", "constant", 15);
    has(&all, "v", "variable", 16);
}

#[test]
fn java_overloads_and_constructors() {
    let src = "package a;\nimport java.util.List;\n/** Docs. */\n@Deprecated\npublic class A<T> {\n  private int x;\n  public A() {}\n  void f(int a) {}\n  void f(String s) {}\n  interface I { void g(); }\n  enum E { ONE, TWO }\n}\n";
    let all = paths("java", src);
    has(&all, "A", "class", 5);
    has(&all, "A/x", "field", 6);
    has(&all, "A/A", "constructor", 7);
    assert_eq!(all.iter().filter(|(p, ..)| p == "A/f").count(), 2);
    has(&all, "A/I", "interface", 10);
    has(&all, "A/I/g", "method", 10);
    has(&all, "A/E/ONE", "enum_member", 11);
}

#[test]
fn c_and_cpp() {
    let c = "#include <stdio.h>\n#define MAX 3\ntypedef struct Point { int x; } Point;\nstatic int *mk(void) { return 0; }\nint add(int a, int b);\nenum Color { RED };\n";
    let all = paths("c", c);
    has(&all, "MAX", "macro", 2);
    has(&all, "Point", "struct", 3);
    has(&all, "Point", "type", 3);
    has(&all, "mk", "function", 4);
    has(&all, "add", "prototype", 5);
    has(&all, "Color/RED", "enum_member", 6);
    let cpp = "namespace ns {\nclass Parser {\n public:\n  int parse();\n  int inline_one() { return 1; }\n};\nint Parser::parse() { return 0; }\ntemplate <typename T> T id(T v) { return v; }\n}\n";
    let all = paths("cpp", cpp);
    has(&all, "ns", "namespace", 1);
    has(&all, "ns/Parser", "class", 2);
    has(&all, "ns/Parser/parse", "prototype", 4);
    has(&all, "ns/Parser/inline_one", "method", 5);
    has(&all, "ns/Parser/parse", "method", 7);
    has(&all, "ns/id", "function", 8);
}

#[test]
fn syntax_errors_keep_what_is_recovered() {
    let src =
        "def good():\n    pass\n\ndef broken(:\n    pass\n\nclass Later:\n    def m(self): pass\n";
    let o = outline(lang::by_name("python").unwrap(), src.as_bytes()).unwrap();
    assert!(o.has_errors);
    let names: Vec<_> = o.syms.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&"good") && names.contains(&"Later") && names.contains(&"m"),
        "{names:?}"
    );
}

#[test]
fn crlf_and_bom_lines_are_the_files_lines() {
    let src = "\u{feff}class A:\r\n    def m(self):\r\n        pass\r\n";
    let all = paths("python", src);
    has(&all, "A", "class", 1);
    has(&all, "A/m", "method", 2);
}

#[test]
fn too_large_is_a_note_not_a_stall() {
    let big = vec![b'x'; MAX_PARSE_BYTES + 1];
    let e = outline(lang::by_name("python").unwrap(), &big).unwrap_err();
    assert!(e.note().contains("over the"));
}

#[test]
fn c_typedefs_of_every_declarator_shape() {
    let src = "typedef int T1;\ntypedef char *T2, **T3;\ntypedef char keybuf[8];\ntypedef int cb_t(int, int);\ntypedef void (Proc)(void *);\ntypedef char **(*Fn)(int);\ntypedef int (*Cmp)(const void *, const void *);\ntypedef struct _K K, *KPtr;\ntypedef const int *Exp(void);\n";
    let all = paths("c", src);
    for (name, line) in [
        ("T1", 1),
        ("T2", 2),
        ("T3", 2),
        ("keybuf", 3),
        ("cb_t", 4),
        ("Proc", 5),
        ("Fn", 6),
        ("Cmp", 7),
        ("K", 8),
        ("KPtr", 8),
        ("Exp", 9),
    ] {
        assert!(
            all.iter()
                .any(|(p, k, l)| p.ends_with(name) && *k == "type" && *l == line),
            "no {name} at line {line} in {all:#?}"
        );
    }
}

#[test]
fn cpp_nested_scopes_export_macros_and_defaulted_members() {
    let src = "void a::B::f() {}\nint ns::C::D::g(int x) { return x; }\nclass V8_EXPORT Arr : public Base {\n  int size() const { return 0; }\n};\nclass K {\n  K() = default;\n  void h() {}\n};\nK::K(const K&) = default;\n";
    let all = paths("cpp", src);
    has(&all, "B/f", "method", 1);
    has(&all, "D/g", "method", 2);
    has(&all, "Arr", "class", 3);
    has(&all, "Arr/size", "method", 4);
    has(&all, "K/K", "prototype", 7);
    has(&all, "K/h", "method", 8);
    has(&all, "K/K", "prototype", 10);
}

#[test]
fn js_prototype_methods_and_exported_functions() {
    let src = "exports.foo = function () {};\nmodule.exports.bar = () => 1;\nX.prototype.m = function () {};\nX.prototype.p = 1;\nconst A = 1, B = 2;\nvar f;\nf = function () {};\nvar Hono = class extends Base {};\n";
    let all = paths("javascript", src);
    has(&all, "foo", "function", 1);
    has(&all, "bar", "function", 2);
    has(&all, "X/m", "method", 3);
    has(&all, "A", "constant", 5);
    has(&all, "B", "constant", 5);
    has(&all, "f", "function", 7);
    has(&all, "Hono", "class", 8);
    assert!(all.iter().all(|(p, ..)| !p.ends_with('p')), "{all:#?}");
}

#[test]
fn one_node_defining_several_names_gives_each_and_parents_none() {
    let all = paths("c", "int a, b;\nstruct S { int x, y; };\n");
    has(&all, "a", "variable", 1);
    has(&all, "b", "variable", 1);
    has(&all, "S/x", "field", 2);
    has(&all, "S/y", "field", 2);
}

#[test]
fn c_definitions_behind_macros_the_grammar_cannot_expand() {
    let src = "typedef EGLBoolean (EGLAPIENTRYP PFNEGLWAITGLPROC) (void);\ntypedef EGLContext (EGLAPIENTRYP PFNEGLCREATECONTEXTPROC) (EGLDisplay dpy, EGLConfig config, const EGLint *attrib_list);\nDECLARE_ASN1_FUNCTIONS(X)\ntypedef struct ossl_msg_st OSSL_MSG;\nstatic GPG_ERR_INLINE gpg_error_t\ngpg_error (gpg_err_code_t code)\n{\n  return 0;\n}\ntypedef unsigned long size_t;\ntypedef void (GL_APIENTRYP PFNGLCOMPILESHADERPROC) (GLuint shader);\ntypedef uint32_t __attribute__((__may_alias__)) u32;\n";
    let all = paths("c", src);
    has(&all, "PFNEGLWAITGLPROC", "type", 1);
    has(&all, "PFNEGLCREATECONTEXTPROC", "type", 2);
    has(&all, "OSSL_MSG", "type", 4);
    has(&all, "gpg_error", "function", 6);
    has(&all, "size_t", "type", 10);
    has(&all, "PFNGLCOMPILESHADERPROC", "type", 11);
    has(&all, "u32", "type", 12);
    // the parameters, the return type and the swallowed keyword are no
    // definitions
    for wrong in [
        "attrib_list",
        "const",
        "EGLint",
        "gpg_error_t",
        "typedef",
        "__attribute__",
    ] {
        assert!(all.iter().all(|(p, ..)| p != wrong), "{wrong} in {all:#?}");
    }
}
