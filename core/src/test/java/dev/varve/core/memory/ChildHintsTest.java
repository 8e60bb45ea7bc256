package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.tree.BPlusTree;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ChildHints}: a descent reaches a child through its parent frame's hint, never through a hint whose frame no
 * longer holds the child, and eviction never takes a frame a reader pinned through a hint; a read through a hint
 * without a pin stands only while eviction has not claimed the frame since.
 */
@Timeout(120)
class ChildHintsTest extends PageMemoryFixture {
    ChildHintsTest() {
        super(64);
    }

    /** Writes pages 0..count-1, each filled with its index, and makes them clean (written to the file). */
    private void writePages(int count) {
        for (int i = 0; i < count; i++) {
            Page p = memory.acquireNew(id(i));
            try {
                p.type(PageHeader.TYPE_INNER);
                for (int at = PageHeader.SIZE; at < PAGE; at += 4) p.putInt(at, i);
            } finally {
                memory.releaseWrite(p);
            }
        }
        new PageMemoryTreeRandomizedTest.Flushing(memory, store, 0).flush();
    }

    /** Page {@code index} read into a frame and released: a parent whose hints the test drives. */
    private Page loaded(int index) {
        Page p = memory.acquireRead(id(index));
        memory.releaseRead(p);
        return p;
    }

    /** Page 1 read as child {@code index} of {@code parent} and released: the parent's frame now hints where it is. */
    private Page hintedChild(Page parent, int index) {
        Page child = memory.acquireReadChild(parent, index, id(1));
        memory.releaseRead(child);
        return child;
    }

    private static void assertHolds(Page p, int index) {
        assertEquals(id(index), p.pageId());
        assertEquals(index, p.getInt(PAGE - 4));
    }

    @Test
    void aChildIsFoundThroughItsParentsHintUntilItsFrameIsTakenThenThroughTheTable() {
        open();
        writePages(2);
        Page parent = loaded(0);
        Page child = memory.acquireReadChild(parent, 5, id(1));
        assertHolds(child, 1);
        memory.releaseRead(child);
        Frame[] hints = ((Frame) parent).childHints;
        assertSame(child, hints[5], "the parent's frame remembers where child 5 was found");

        Page again = memory.acquireReadChild(parent, 5, id(1));
        assertSame(child, again);
        memory.releaseRead(again);

        // the child's frame is taken for another page: the hint must not be followed into it
        Frame taken = (Frame) child;
        assertTrue(memory.table.claimForEviction(id(1), taken));
        Page reloaded = memory.acquireReadChild(parent, 5, id(1));
        assertNotSame(taken, reloaded, "a frame claimed by eviction is never returned through a hint");
        assertHolds(reloaded, 1);
        memory.releaseRead(reloaded);
        assertSame(reloaded, ((Frame) parent).childHints[5], "the hint now names the frame the table found");

        // a hint naming a frame that holds another page is ignored too
        Page other = memory.acquireReadChild(parent, 6, id(0));
        assertHolds(other, 0);
        memory.releaseRead(other);
        ((Frame) parent).childHints[5] = (Frame) other;
        Page viaTable = memory.acquireReadChild(parent, 5, id(1));
        assertHolds(viaTable, 1);
        memory.releaseRead(viaTable);
    }

    @Test
    void aPageReadAgainComesFromItsLastFrameOnlyWhileThatFrameHoldsIt() {
        open();
        writePages(2);
        Page first = loaded(1);
        Page again = memory.acquireReadAgain(first, id(1));
        assertSame(first, again);
        memory.releaseRead(again);

        Frame taken = (Frame) first;
        assertTrue(memory.table.claimForEviction(id(1), taken));
        Page reloaded = memory.acquireReadAgain(taken, id(1));
        assertNotSame(taken, reloaded, "a frame claimed by eviction is never returned as the page's last frame");
        assertHolds(reloaded, 1);
        memory.releaseRead(reloaded);

        PageAccess unlatched = memory.underWriterExclusion();
        for (Page last : new Page[] {loaded(0), null}) { // a frame holding another page, and no guess
            Page p = unlatched.acquireReadAgain(last, id(1));
            assertSame(reloaded, p);
            assertHolds(p, 1);
            unlatched.releaseRead(p);
        }
    }

    @Test
    void aTreeFindsItsRootAsChildZeroOfItsMetaPage() {
        open();
        BPlusTree tree = treeOf(2_000);
        assertTrue(tree.height() > 1);
        Page meta = memory.acquireRead(PageId.of(FILE, 0));
        long rootId = meta.getLong(40); // MetaPage.ROOT_OFFSET
        memory.releaseRead(meta);
        memory.childHints.drop((Frame) meta); // what the puts' descents left

        BPlusTree reader = new BPlusTree(memory.underWriterExclusion(), FILE);
        assertArrayEquals(value(7), reader.get(key(7)));
        Frame[] hints = ((Frame) meta).childHints;
        assertNotNull(hints, "the meta page's frame remembers where the root was found");
        assertEquals(rootId, hints[0].pageId());
    }

    @Test
    void anOptimisticReadThroughAHintStandsUntilEvictionClaimsTheFrame() {
        open();
        writePages(2);
        Page parent = loaded(0);
        Page child = hintedChild(parent, 5);
        PageAccess unlatched = memory.underWriterExclusion();
        long stamp = unlatched.peekChild(parent, 5, id(1));
        assertTrue(stamp >= 0, "the hint names a frame holding the child");
        assertSame(child, unlatched.stamped(stamp));
        assertHolds(unlatched.stamped(stamp), 1);
        assertTrue(unlatched.validate(stamp), "nothing happened to the frame");
        assertEquals(0, ((Frame) child).pins(), "an optimistic read pins nothing");
        assertEquals(-1, unlatched.peekChild(parent, 6, id(1)), "no hint at index 6");
        assertEquals(-1, unlatched.peekChild(parent, 5, id(0)), "the hinted frame holds another page");
        assertEquals(-1, memory.peekChild(parent, 5, id(1)), "latched reads never go without a pin");

        // a claim that the reader's pin turns back still voids the stamps taken before it
        Page held = memory.acquireReadChild(parent, 5, id(1));
        assertFalse(memory.table.claimForEviction(id(1), (Frame) held));
        assertFalse(unlatched.validate(stamp), "a stamp taken before a claim stands although the frame could have been reused");
        memory.releaseRead(held);
        long again = unlatched.peekChild(parent, 5, id(1));
        assertTrue(again >= 0 && unlatched.validate(again), "the frame went back to its page: a new stamp stands");

        assertTrue(memory.table.claimForEviction(id(1), (Frame) child));
        assertFalse(unlatched.validate(again), "the frame was claimed for another page after the stamp");
        assertEquals(-1, unlatched.peekChild(parent, 5, id(1)), "a claimed frame gives no stamp");
    }

    @Test
    void aPageReadAgainOptimisticallyStandsOnlyWhileItsLastFrameHoldsIt() {
        open();
        writePages(2);
        Page first = loaded(1);
        PageAccess unlatched = memory.underWriterExclusion();
        long stamp = unlatched.peekAgain(first, id(1));
        assertTrue(stamp >= 0);
        assertSame(first, unlatched.stamped(stamp));
        assertEquals(-1, unlatched.peekAgain(first, id(0)), "the frame holds another page");
        assertEquals(-1, unlatched.peekAgain(null, id(1)), "no frame from before");
        assertTrue(memory.table.claimForEviction(id(1), (Frame) first));
        assertFalse(unlatched.validate(stamp));
        assertEquals(-1, unlatched.peekAgain(first, id(1)));
    }

    /**
     * The frame a get is reading its root from without a pin is taken by eviction and filled with another inner page
     * of the tree between the stamp and the read: the get sees the stamp fail and reads the root again, so it finds
     * the value (trusting what it read would send it down the other page's children).
     */
    @Test
    void aGetWhoseInnerPageIsTakenDuringAnOptimisticReadReadsItAgain() {
        open();
        BPlusTree tree = treeOf(5_000); // clean pages: eviction may claim them
        assertTrue(tree.height() >= 3, "an inner page under the root: height " + tree.height());
        Page meta = memory.acquireRead(PageId.of(FILE, 0));
        long rootId = meta.getLong(40); // MetaPage.ROOT_OFFSET
        memory.releaseRead(meta);
        byte[] otherInner = null;
        for (int i = 1; otherInner == null; i++) {
            Page p = memory.acquireRead(id(i));
            if (p.type() == PageHeader.TYPE_INNER && p.pageId() != rootId) otherInner = p.getBytes(0, PAGE);
            memory.releaseRead(p);
        }
        byte[] replacement = otherInner;

        TakingOnce evictingOnce = new TakingOnce(f -> f.pageId() == rootId, f -> replacement);
        BPlusTree reader = new BPlusTree(evictingOnce, FILE);
        assertArrayEquals(value(1), reader.get(key(1)), "the first get leaves the hints the next one reads through");
        for (int k = 0; k < 5_000; k += 7) assertArrayEquals(value(k), reader.get(key(k)), "key " + k);
        assertTrue(evictingOnce.taken, "the root was read without a pin and taken under the read");
    }

    /**
     * {@link BPlusTree#getUnsettled} reads the leaf without a pin too: when eviction takes the leaf's frame for another
     * leaf under the read, it says so ({@link BPlusTree#UNSETTLED}) rather than return what that leaf holds (nothing
     * for the key); with no hint to the leaf, or a value on overflow pages, it leaves the get to the locked read.
     */
    @Test
    void anUnsettledGetWhoseLeafIsTakenDuringTheReadSaysSo() {
        open();
        BPlusTree tree = treeOf(5_000);
        byte[][] leaves = new byte[2][];
        long[] leafIds = new long[2];
        for (int i = 1, n = 0; n < 2; i++) {
            Page p = memory.acquireRead(id(i));
            if (p.type() == PageHeader.TYPE_LEAF) {
                leaves[n] = p.getBytes(0, PAGE);
                leafIds[n++] = p.pageId();
            }
            memory.releaseRead(p);
        }
        TakingOnce evictingOnce = new TakingOnce(f -> f.type() == PageHeader.TYPE_LEAF, f -> f.pageId() == leafIds[0] ? leaves[1] : leaves[0]);
        BPlusTree reader = new BPlusTree(evictingOnce, FILE);
        evictingOnce.armed = false;
        assertArrayEquals(value(1), reader.get(key(1)), "the locked read leaves the hints");
        assertArrayEquals(value(1), reader.getUnsettled(key(1)), "read through the hints without a pin");
        assertNull(reader.get(key(-1)));
        assertNull(reader.getUnsettled(key(-1)), "an absent key, its leaf hinted");
        evictingOnce.armed = true;
        assertSame(BPlusTree.UNSETTLED, reader.getUnsettled(key(1)), "the leaf's frame was taken for another leaf under the read");
        assertTrue(evictingOnce.taken);
        assertSame(BPlusTree.UNSETTLED, reader.getUnsettled(key(1)), "the hint names a frame that holds the leaf no more: nothing is loaded");
        assertArrayEquals(value(1), reader.get(key(1)));
        assertArrayEquals(value(1), reader.getUnsettled(key(1)));

        BPlusTree writer = new BPlusTree(new PageMemoryTreeRandomizedTest.Flushing(memory, store, FRAMES / 4), FILE);
        byte[] large = new byte[3 * PAGE];
        writer.put(key(2), large);
        assertArrayEquals(large, reader.get(key(2)));
        assertSame(BPlusTree.UNSETTLED, reader.getUnsettled(key(2)), "a value on overflow pages is read under the lock");
        assertEquals(5_000, tree.size());
    }

    /**
     * Reads without a latch, and once armed, the first frame {@code which} picks is taken by eviction under the read
     * it is stamped for and loaded with {@code replacement}'s bytes: what a reader sees when a load into a frame
     * eviction claimed races its read.
     */
    private final class TakingOnce implements PageAccess {
        private final PageAccess unlatched = memory.underWriterExclusion();
        private final java.util.function.Predicate<Frame> which;
        private final java.util.function.Function<Frame, byte[]> replacement;
        boolean armed = true;
        boolean taken;

        TakingOnce(java.util.function.Predicate<Frame> which, java.util.function.Function<Frame, byte[]> replacement) {
            this.which = which;
            this.replacement = replacement;
        }

        @Override public int pageSize() { return PAGE; }
        @Override public Page acquireRead(long pageId) { return unlatched.acquireRead(pageId); }
        @Override public Page acquireReadChild(Page parent, int index, long childId) { return unlatched.acquireReadChild(parent, index, childId); }
        @Override public Page acquireReadAgain(Page last, long pageId) { return unlatched.acquireReadAgain(last, pageId); }
        @Override public long peekChild(Page parent, int index, long childId) { return unlatched.peekChild(parent, index, childId); }
        @Override public long peekAgain(Page last, long pageId) { return unlatched.peekAgain(last, pageId); }
        @Override public boolean validate(long stamp) { return unlatched.validate(stamp); }
        @Override public void releaseRead(Page page) { unlatched.releaseRead(page); }
        @Override public Page acquireWrite(long pageId) { throw new UnsupportedOperationException(); }
        @Override public Page acquireNew(long pageId) { throw new UnsupportedOperationException(); }
        @Override public void releaseWrite(Page page) { throw new UnsupportedOperationException(); }

        @Override
        public Page stamped(long stamp) {
            Frame f = (Frame) unlatched.stamped(stamp);
            if (armed && !taken && which.test(f)) {
                byte[] bytes = replacement.apply(f);
                assertTrue(memory.table.claimForEviction(f.pageId(), f));
                f.putBytes(0, bytes, 0, PAGE);
                taken = true;
            }
            return f;
        }
    }

    @Test
    void aFramePinnedThroughAHintIsNotClaimedForEviction() {
        open();
        writePages(2);
        Page parent = loaded(0);
        Page child = hintedChild(parent, 0);
        Page held = memory.acquireReadChild(parent, 0, id(1)); // pinned past the table
        assertSame(child, held);
        assertFalse(memory.table.claimForEviction(id(1), (Frame) held), "eviction took a frame a reader holds");
        assertHolds(held, 1);
        assertTrue(((Frame) held).holdsReady(id(1)), "a refused claim gives the frame back loaded");
        memory.releaseRead(held);
        assertTrue(memory.table.claimForEviction(id(1), (Frame) held), "once released the frame may go");
    }

    @Test
    void hintArraysStayWithinTheirBudgetAndADroppedArrayGivesItsShareBack() {
        open();
        writePages(3);
        ChildHints small = new ChildHints(20); // one array of 16 hints and its header
        Page a = loaded(0);
        Page b = loaded(1);
        small.acquire(memory, a, 0, id(2)).unpin();
        assertNotNull(((Frame) a).childHints);
        assertEquals(20, small.used());
        Frame viaTable = small.acquire(memory, b, 0, id(2));
        assertHolds(viaTable, 2);
        viaTable.unpin();
        assertNull(((Frame) b).childHints, "over the budget the child is found through the table and no array is made");
        assertEquals(20, small.used());
        small.drop((Frame) a);
        assertNull(((Frame) a).childHints);
        assertEquals(0, small.used());
        small.acquire(memory, b, 0, id(2)).unpin();
        assertNotNull(((Frame) b).childHints, "the dropped array's share went to the next parent");
        assertEquals(20, small.used());
    }

    /**
     * Two readers search a tree over twice the region's size through hints while their own reads evict pages
     * under them: every value read is the value put.
     */
    @Test
    void readersFollowingHintsWhileTheirPagesAreEvictedReadEveryValueRight() throws Exception {
        open();
        int keys = 25_000;
        BPlusTree tree = treeOf(keys);
        assertTrue(tree.pageCount() > 2 * FRAMES, "the tree must not fit the region: " + tree.pageCount() + " pages");

        long evictedBefore = memory.pagesEvicted();
        PageAccess reads = memory.underWriterExclusion();
        BPlusTree reader = new BPlusTree(reads, FILE);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                long seed = t;
                done.add(threads.submit(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    for (int i = 0; i < 40_000; i++) {
                        int k = r.nextInt(keys);
                        assertArrayEquals(value(k), reader.get(key(k)), "key " + k);
                    }
                    return 40_000;
                }));
            }
            for (Future<Integer> f : done) assertEquals(40_000, f.get());
        } finally {
            threads.shutdownNow();
        }
        assertTrue(memory.pagesEvicted() - evictedBefore > 10_000, "pages evicted while reading: " + (memory.pagesEvicted() - evictedBefore));
    }

    /** A tree of keys 0..keys-1 in {@link #FILE}, every page written to its file (clean, so eviction may take it). */
    private BPlusTree treeOf(int keys) {
        PageMemoryTreeRandomizedTest.Flushing writes = new PageMemoryTreeRandomizedTest.Flushing(memory, store, FRAMES / 4);
        BPlusTree.format(writes, FILE);
        BPlusTree tree = new BPlusTree(writes, FILE);
        for (int k = 0; k < keys; k++) tree.put(key(k), value(k));
        writes.flush();
        return tree;
    }

    private static byte[] key(int k) {
        return ByteBuffer.allocate(8).putLong(k * 0x9E3779B97F4A7C15L).array();
    }

    private static byte[] value(int k) {
        byte[] v = new byte[100];
        for (int i = 0; i < v.length; i++) v[i] = (byte) (k * 31 + i);
        return v;
    }
}
