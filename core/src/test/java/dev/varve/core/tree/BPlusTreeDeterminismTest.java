package dev.varve.core.tree;

import org.junit.jupiter.api.Timeout;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.varve.core.page.PageId;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Invariant I6 at the tree level: the same operations from the same page images give byte-identical page images,
 * whether run by a tree object that has been working for a while or by a fresh one opened on copied pages (as WAL
 * replay after a crash would).
 */
@Timeout(180)
class BPlusTreeDeterminismTest {
    private static final int FILE = PageId.fileId(9, 1);

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096, 16384})
    void sameOperationsSamePages(int pageSize) {
        long seed = 77L + pageSize;
        TestPageAccess first = new TestPageAccess(pageSize);
        TestPageAccess second = new TestPageAccess(pageSize);
        BPlusTree.format(first, FILE);
        BPlusTree.format(second, FILE);
        BPlusTree a = new BPlusTree(first, FILE);
        BPlusTree b = new BPlusTree(second, FILE);
        Workload wa = new Workload(seed, pageSize, 600);
        Workload wb = new Workload(seed, pageSize, 600);
        for (int round = 0; round < 6; round++) {
            apply(a, wa, round, 700);
            apply(b, wb, round, 700);
            assertNull(first.firstDifference(second), "first differing page after round " + round);
        }
        a.clear();
        b.clear();
        assertNull(first.firstDifference(second), "after clear");
    }

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096})
    void freshTreeOnCopiedPagesContinuesIdentically(int pageSize) {
        long seed = 5L * pageSize;
        TestPageAccess running = new TestPageAccess(pageSize);
        BPlusTree.format(running, FILE);
        BPlusTree warm = new BPlusTree(running, FILE);
        Workload w = new Workload(seed, pageSize, 800);
        apply(warm, w, 0, 2000);
        TestPageAccess replayed = running.copy();
        BPlusTree fresh = new BPlusTree(replayed, FILE);
        long continuation = w.random.nextLong();
        apply(warm, new Workload(continuation, pageSize, 800), 1, 1500);
        apply(fresh, new Workload(continuation, pageSize, 800), 1, 1500);
        assertNull(running.firstDifference(replayed), "first differing page");
        fresh.verify();
    }

    /** {@code ops} seeded puts and removes; odd rounds lean towards removes so pages merge and free. */
    private static void apply(BPlusTree tree, Workload w, int round, int ops) {
        int removeShare = round % 2 == 0 ? 25 : 65;
        for (int i = 0; i < ops; i++) {
            byte[] key = w.key();
            if (w.random.nextInt(100) < removeShare) tree.remove(key);
            else tree.put(key, w.value());
        }
        tree.verify();
    }
}
