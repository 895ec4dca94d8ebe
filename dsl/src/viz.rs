//! Diagrams of compiled graphs: Mermaid and DOT.
