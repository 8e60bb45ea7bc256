package dev.varve.core.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Deletes give space back: merges, root collapse, free-list reuse, clear(). */
@Timeout(180)
class BPlusTreeSpaceTest {
    private static final int FILE = PageId.fileId(4, 4);

    /** Seeded distinct keys with values of mixed sizes (some overflowing), in a fixed insertion order. */
    private static List<byte[][]> entries(int pageSize, int n, long seed) {
        Workload w = new Workload(seed, pageSize, 2);
        List<byte[][]> entries = new ArrayList<>();
        java.util.TreeSet<byte[]> seen = new java.util.TreeSet<>(java.util.Arrays::compareUnsigned);
        while (entries.size() < n) {
            byte[] key = w.random.nextInt(3) == 0 ? w.freshKey() : w.bytes(4 + w.random.nextInt(20));
            if (!seen.add(key)) continue;
            int length = w.random.nextInt(20) == 0 ? pageSize * 2 + w.random.nextInt(pageSize) : w.random.nextInt(300);
            entries.add(new byte[][] {key, w.bytes(length)});
        }
        return entries;
    }

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096, 16384})
    void deleteAllThenReinsertDoesNotGrowTheFile(int pageSize) {
        TestPageAccess pages = new TestPageAccess(pageSize);
        BPlusTree.format(pages, FILE);
        BPlusTree tree = new BPlusTree(pages, FILE);
        List<byte[][]> entries = entries(pageSize, 3000, pageSize);
        for (byte[][] e : entries) tree.put(e[0], e[1]);
        tree.verify();
        int pageCount = tree.pageCount();
        int height = tree.height();
        assertTrue(height >= 3, "height " + height);
        for (int round = 0; round < 3; round++) {
            List<byte[][]> order = new ArrayList<>(entries);
            Collections.shuffle(order, new Random(round));
            int i = 0;
            for (byte[][] e : order) {
                assertTrue(tree.remove(e[0]));
                if (++i % 500 == 0) tree.verify();
            }
            tree.verify();
            assertEquals(0, tree.size());
            assertEquals(1, tree.height());
            assertEquals(pageCount, tree.pageCount());
            assertEquals(pageCount - 2, tree.freePageCount(), "all but meta and root are free");
            for (byte[][] e : entries) tree.put(e[0], e[1]);
            tree.verify();
            assertEquals(pageCount, tree.pageCount(), "round " + round + ": re-insert took pages off the free list");
            assertEquals(height, tree.height());
        }
        for (byte[][] e : entries) assertArrayEquals(e[1], tree.get(e[0]));
        pages.assertNothingHeld("space");
    }

    @Test
    void removesMergePagesAndCollapseTheRoot() {
        TestPageAccess pages = new TestPageAccess(4096);
        BPlusTree.format(pages, FILE);
        BPlusTree tree = new BPlusTree(pages, FILE);
        int n = 30_000;
        for (int i = 0; i < n; i++) tree.put(String.format("%09d", i * 7919 % n).getBytes(), new byte[60]);
        int pageCount = tree.pageCount();
        int height = tree.height();
        assertTrue(height >= 3, "height " + height);
        int previousFree = tree.freePageCount();
        boolean freedWhileNonEmpty = false;
        for (int i = 0; i < n; i++) {
            assertTrue(tree.remove(String.format("%09d", i).getBytes()));
            if (i % 3000 == 0) {
                tree.verify();
                assertEquals(pageCount, tree.pageCount());
                freedWhileNonEmpty |= tree.freePageCount() > previousFree;
                previousFree = tree.freePageCount();
                assertTrue(tree.height() <= height);
            }
        }
        assertTrue(freedWhileNonEmpty, "merges freed pages before the tree emptied");
        tree.verify();
        assertEquals(1, tree.height());
        assertEquals(pageCount - 2, tree.freePageCount());
    }

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096})
    void clearFreesEveryPageButMeta(int pageSize) {
        TestPageAccess pages = new TestPageAccess(pageSize);
        BPlusTree.format(pages, FILE);
        BPlusTree tree = new BPlusTree(pages, FILE);
        List<byte[][]> entries = entries(pageSize, 1500, 11);
        for (byte[][] e : entries) tree.put(e[0], e[1]);
        int pageCount = tree.pageCount();
        long writesBefore = pages.writeAcquires();
        tree.clear();
        pages.assertNothingHeld("clear");
        assertEquals(2, pages.writeAcquires() - writesBefore, "clear writes the meta page and the new root only, however large the tree");
        tree.verify();
        assertEquals(0, tree.size());
        assertEquals(1, tree.height());
        assertEquals(pageCount, tree.pageCount(), "the file keeps its length");
        assertEquals(pageCount - 2, tree.freePageCount());
        int before = pages.peek(PageId.of(FILE, pageCount - 1)).type();
        assertTrue(before != PageHeader.TYPE_FREE || pageCount < 3, "erased pages keep their old contents until reused");
        assertNull(tree.get(entries.get(0)[0]));
        assertTrue(tree.scan(null, true, null, 5).isEmpty());
        for (byte[][] e : entries) tree.put(e[0], e[1]);
        tree.verify();
        assertEquals(pageCount, tree.pageCount(), "re-insert after clear reuses the erased pages");
        tree.clear();
        tree.clear();
        tree.verify();
    }
}
