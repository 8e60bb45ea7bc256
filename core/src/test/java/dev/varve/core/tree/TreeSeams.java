package dev.varve.core.tree;

/** The tree's test seams for tests outside its package (the engine's): they reach a partition's page limit without writing 8 TiB. */
public final class TreeSeams {
    private TreeSeams() {
    }

    /** {@code tree}'s file holds at most {@code maxPages} pages from now on. */
    public static void limitPages(BPlusTree tree, int maxPages) {
        tree.limitPages(maxPages);
    }
}
