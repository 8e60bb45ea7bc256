/**
 * The B+tree each partition keeps in its pages: variable-length byte-array keys in unsigned order, slotted leaf and
 * inner pages, overflow chains for large values, a free list, and the meta page holding root and height.
 * {@link dev.varve.core.tree.BPlusTree} is the entry point; insertion, removal, scans, verification and salvage are
 * each their own class. The tree takes no lock: its caller holds the partition lock (write for changes), and the tree
 * latches pages through page memory, several at once only while a change splits or merges.
 */
package dev.varve.core.tree;
