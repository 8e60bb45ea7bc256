package dev.varve.core.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(180)
class BPlusTreeTest {
    private static final int FILE = PageId.fileId(5, 2);

    private final TestPageAccess pages = new TestPageAccess(4096);
    private final BPlusTree tree = open(pages);

    private static BPlusTree open(TestPageAccess pages) {
        BPlusTree.format(pages, FILE);
        return new BPlusTree(pages, FILE);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] key(int i) {
        return b(String.format("key-%08d", i));
    }

    private static byte[] filled(int length, int seed) {
        byte[] v = new byte[length];
        for (int i = 0; i < length; i++) v[i] = (byte) (i * 31 + seed);
        return v;
    }

    private List<Long> snapshot() {
        List<Long> out = new ArrayList<>();
        for (long id : pages.pageIds()) out.add((long) java.util.Arrays.hashCode(pages.image(id)) ^ id);
        return out;
    }

    /**
     * What removing or replacing a key frees, read from its leaf alone: a write reserves head-room for it, since
     * freeing erases every page of the chain.
     */
    @Test
    void overflowPagesCountsTheChainAValueHolds() {
        tree.put(b("inline"), b("small"));
        tree.put(b("large"), filled(10_000, 1));
        tree.put(b("largest"), filled(BPlusTree.MAX_VALUE_BYTES, 2));
        assertEquals(-1, tree.overflowPages(b("absent")));
        assertEquals(0, tree.overflowPages(b("inline")));
        assertEquals(3, tree.overflowPages(b("large"))); // 4048 value bytes an overflow page
        assertEquals(BPlusTree.maxOverflowPages(4096), tree.overflowPages(b("largest")));
        int before = tree.freePageCount();
        tree.remove(b("largest"));
        assertEquals(BPlusTree.maxOverflowPages(4096), tree.freePageCount() - before, "the pages its removal freed");
    }

    @Test
    void emptyTreeHasNothing() {
        assertEquals(0, tree.size());
        assertNull(tree.get(b("a")));
        assertNull(tree.get(new byte[0]));
        assertTrue(tree.scan(null, true, null, 10).isEmpty());
        assertFalse(tree.scan(null, true, null, 10).hasMore());
        assertFalse(tree.remove(b("a")));
        assertEquals(1, tree.height());
        assertEquals(2, tree.pageCount());
        tree.verify();
    }

    @Test
    void putGetReplaceRemove() {
        assertFalse(tree.put(b("b"), b("2")));
        assertFalse(tree.put(b("a"), b("1")));
        assertTrue(tree.put(b("a"), b("one")));
        assertArrayEquals(b("one"), tree.get(b("a")));
        assertArrayEquals(b("2"), tree.get(b("b")));
        assertEquals(2, tree.size());
        assertTrue(tree.remove(b("a")));
        assertFalse(tree.remove(b("a")));
        assertNull(tree.get(b("a")));
        assertEquals(1, tree.size());
        tree.verify();
        pages.assertNothingHeld("ops");
    }

    @Test
    void emptyKeyAndEmptyValueAreOrdinary() {
        assertFalse(tree.put(new byte[0], new byte[0]));
        assertFalse(tree.put(new byte[] {0}, b("zero")));
        assertArrayEquals(new byte[0], tree.get(new byte[0]));
        ScanBatch all = tree.scan(null, true, null, 10);
        assertEquals(2, all.size());
        assertArrayEquals(new byte[0], all.key(0));
        assertArrayEquals(new byte[] {0}, all.key(1));
        assertEquals(1, tree.scan(new byte[0], false, null, 10).size());
        assertTrue(tree.remove(new byte[0]));
        tree.verify();
    }

    @Test
    void keysCompareUnsigned() {
        tree.put(new byte[] {(byte) 0xFF}, b("high"));
        tree.put(new byte[] {0x01}, b("low"));
        tree.put(new byte[] {0x01, 0x00}, b("low+"));
        ScanBatch all = tree.scan(null, true, null, 10);
        assertArrayEquals(new byte[] {0x01}, all.key(0));
        assertArrayEquals(new byte[] {0x01, 0x00}, all.key(1));
        assertArrayEquals(new byte[] {(byte) 0xFF}, all.key(2));
    }

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096, 16384})
    void maximumKeysAndValuesFit(int pageSize) {
        TestPageAccess p = new TestPageAccess(pageSize);
        BPlusTree t = open(p);
        int maxKey = BPlusTree.maxKeyBytes(pageSize);
        assertEquals(pageSize / 4, maxKey);
        for (int i = 0; i < 40; i++) {
            byte[] k = filled(maxKey, 0);
            k[maxKey - 1] = (byte) i;
            k[maxKey - 2] = (byte) (i * 7);
            assertFalse(t.put(k, filled(i % 3 == 0 ? 0 : 20 + i, i)));
        }
        byte[] big = filled(BPlusTree.MAX_VALUE_BYTES, 3);
        assertFalse(t.put(b("big"), big));
        assertArrayEquals(big, t.get(b("big")));
        t.verify();
        assertTrue(t.height() >= 2, "maximum keys split pages");
        p.assertNothingHeld("max sizes");
    }

    @Test
    void invalidArgumentsNameTheLimitAndChangeNothing() {
        for (int i = 0; i < 200; i++) tree.put(key(i), filled(50, i));
        List<Long> before = snapshot();
        long writes = pages.writeAcquires();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tree.put(new byte[1025], b("v")));
        assertTrue(e.getMessage().contains("1025") && e.getMessage().contains("1024"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> tree.put(b("k"), new byte[BPlusTree.MAX_VALUE_BYTES + 1]));
        assertTrue(e.getMessage().contains(String.valueOf(BPlusTree.MAX_VALUE_BYTES + 1))
                && e.getMessage().contains(String.valueOf(BPlusTree.MAX_VALUE_BYTES)), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> tree.put(null, b("v")));
        assertThrows(IllegalArgumentException.class, () -> tree.put(b("k"), null));
        assertThrows(IllegalArgumentException.class, () -> tree.get(null));
        assertThrows(IllegalArgumentException.class, () -> tree.get(new byte[1025]));
        assertThrows(IllegalArgumentException.class, () -> tree.remove(null));
        assertThrows(IllegalArgumentException.class, () -> tree.remove(new byte[1025]));
        assertThrows(IllegalArgumentException.class, () -> tree.scan(null, true, null, 0));
        assertEquals(writes, pages.writeAcquires(), "rejected operations take no write latch");
        assertEquals(before, snapshot());
        pages.assertNothingHeld("rejections");
    }

    @Test
    void readsAndMissingRemovesWriteNothing() {
        for (int i = 0; i < 500; i++) tree.put(key(i), filled(i % 7 == 0 ? 3000 : 40, i));
        long writes = pages.writeAcquires();
        for (int i = 0; i < 600; i++) tree.get(key(i));
        tree.scan(null, true, null, 1000);
        tree.scan(key(10), false, key(300), 50);
        assertFalse(tree.remove(b("absent")));
        tree.size();
        tree.verify();
        assertEquals(writes, pages.writeAcquires());
        pages.assertNothingHeld("reads");
    }

    @Test
    void openingSomethingElseNamesThePage() {
        TestPageAccess p = new TestPageAccess(4096);
        Page page = p.acquireNew(PageId.of(FILE, 0));
        page.type(PageHeader.TYPE_LEAF);
        p.releaseWrite(page);
        CorruptTreeException e = assertThrows(CorruptTreeException.class, () -> new BPlusTree(p, FILE));
        assertEquals(PageId.of(FILE, 0), e.pageId());
        assertTrue(e.getMessage().contains("meta") && e.getMessage().contains("5/2:0"), e.getMessage());
        p.assertNothingHeld("open");
    }

    @Test
    void verifyFindsABrokenPage() {
        for (int i = 0; i < 300; i++) tree.put(key(i), filled(40, i));
        tree.verify();
        // swap two keys' first bytes in some leaf: order breaks
        long leaf = PageId.of(FILE, 1);
        Page page = pages.peek(leaf);
        assertEquals(PageHeader.TYPE_LEAF, page.type());
        int last = SlottedPage.slot(page, SlottedPage.count(page) - 1);
        page.putByte(last + LeafPage.KEY_OFFSET, 0);
        assertThrows(CorruptTreeException.class, tree::verify);
    }

    @ParameterizedTest(name = "ascending={0}")
    @ValueSource(booleans = {true, false})
    void sequentialLoadsFillPages(boolean ascending) {
        int n = 20_000;
        for (int i = 0; i < n; i++) {
            int k = ascending ? i : n - 1 - i;
            tree.put(key(k), filled(100, k));
        }
        tree.verify();
        assertTrue(tree.height() >= 3, "height " + tree.height());
        // 100-byte values and 12-byte keys: about 34 per 4 KiB leaf when pages are filled
        assertTrue(tree.pageCount() < n / 30, "pages " + tree.pageCount());
        for (int i = 0; i < n; i += 997) assertArrayEquals(filled(100, i), tree.get(key(i)));
    }

    @Test
    void overflowValuesAreFreedOnOverwriteAndRemove() {
        tree.put(b("k"), filled(100_000, 1));
        int pages1 = tree.pageCount();
        tree.put(b("k"), filled(100_000, 2));
        assertEquals(pages1, tree.pageCount(), "overwrite reuses the freed chain");
        assertArrayEquals(filled(100_000, 2), tree.get(b("k")));
        tree.put(b("k"), b("small"));
        tree.verify();
        assertEquals(pages1 - 2, tree.freePageCount());
        tree.remove(b("k"));
        tree.put(b("j"), filled(100_000, 3));
        assertEquals(pages1, tree.pageCount());
        tree.verify();
    }

    @Test
    void inlineThresholdIsAQuarterPage() {
        assertEquals(996, BPlusTree.maxInlineBytes(4096));
        assertEquals(228, BPlusTree.maxInlineBytes(1024));
        int limit = BPlusTree.maxInlineBytes(4096);
        tree.put(b("k"), new byte[limit - 1]);
        assertEquals(2, tree.pageCount(), "inline");
        tree.put(b("k"), new byte[limit]);
        assertEquals(3, tree.pageCount(), "one overflow page");
        tree.put(new byte[1024], new byte[8]);
        assertEquals(3, tree.pageCount(), "values up to 8 bytes stay inline");
        tree.verify();
    }

    @Test
    void unusedRangeIsTheGapInsidePages() {
        for (int i = 0; i < 10; i++) tree.put(key(i), filled(100, i));
        Page root = pages.peek(PageId.of(FILE, 1));
        long range = PageLayout.unusedRange(root);
        int start = PageLayout.rangeStart(range);
        int end = PageLayout.rangeEnd(range);
        assertEquals(SlottedPage.SLOTS_OFFSET + SlottedPage.SLOT_BYTES * 10, start);
        assertEquals(4096 - 10 * (LeafPage.CELL_HEADER_BYTES + 12 + 100), end);
        for (int i = start; i < end; i++) assertEquals(0, root.getByte(i));
        assertEquals((long) MetaPage.END << 32 | 4096, PageLayout.unusedRange(pages.peek(PageId.of(FILE, 0))), "meta page tail");
        tree.remove(key(0));
        tree.put(b("big"), new byte[5000]);
        long overflowTail = PageLayout.unusedRange(pages.peek(PageId.of(FILE, 3)));
        assertEquals(OverflowPage.DATA_OFFSET + 5000 - OverflowPage.capacity(4096), PageLayout.rangeStart(overflowTail));
    }

    @Test
    void scanBoundsEveryCombination() {
        for (int i = 0; i < 100; i += 2) tree.put(key(i), filled(10, i));
        byte[][] bounds = {null, key(-1), key(0), key(1), key(50), key(51), key(98), key(99), key(200)};
        for (byte[] from : bounds) {
            for (boolean inclusive : new boolean[] {true, false}) {
                for (byte[] to : bounds) {
                    List<Integer> expected = new ArrayList<>();
                    for (int i = 0; i < 100; i += 2) {
                        byte[] k = key(i);
                        int lo = from == null ? 1 : java.util.Arrays.compareUnsigned(k, from);
                        boolean aboveFrom = from == null || (inclusive ? lo >= 0 : lo > 0);
                        boolean belowTo = to == null || java.util.Arrays.compareUnsigned(k, to) < 0;
                        if (aboveFrom && belowTo) expected.add(i);
                    }
                    List<Integer> actual = new ArrayList<>();
                    byte[] position = from;
                    boolean positionInclusive = inclusive;
                    while (true) {
                        ScanBatch batch = tree.scan(position, positionInclusive, to, 7);
                        for (int j = 0; j < batch.size(); j++) {
                            actual.add(Integer.parseInt(new String(batch.key(j), StandardCharsets.UTF_8).substring(4)));
                        }
                        if (!batch.hasMore()) break;
                        position = batch.lastKey();
                        positionInclusive = false;
                    }
                    assertEquals(expected, actual, "from " + (from == null ? "-" : new String(from, StandardCharsets.UTF_8))
                            + (inclusive ? " incl" : " excl") + " to " + (to == null ? "-" : new String(to, StandardCharsets.UTF_8)));
                }
            }
        }
        pages.assertNothingHeld("scans");
    }

    @Test
    void writesLatchOnlyThePagesTheyChange() {
        for (int i = 0; i < 3000; i++) tree.put(key(i * 2), filled(40, i));
        assertTrue(tree.height() >= 2);
        long writes = pages.writeAcquires();
        tree.remove(key(0));
        assertEquals(2, pages.writeAcquires() - writes, "remove without a merge: leaf and meta");
        writes = pages.writeAcquires();
        tree.put(key(1), filled(40, 1));
        assertEquals(2, pages.writeAcquires() - writes, "new key without a split: leaf and meta (entry count)");
        writes = pages.writeAcquires();
        tree.put(key(1), filled(40, 2));
        assertEquals(1, pages.writeAcquires() - writes, "same-size overwrite: the leaf only");
        pages.assertNothingHeld("writes");
    }

    @Test
    void aTreeOverPastPageImagesReadsThePastWithoutWriting() {
        java.util.TreeMap<byte[], byte[]> past = new java.util.TreeMap<>(java.util.Arrays::compareUnsigned);
        for (int i = 0; i < 2000; i++) {
            byte[] v = filled(i % 50 == 0 ? 5000 : 30, i);
            tree.put(key(i), v);
            past.put(key(i), v);
        }
        TestPageAccess snapshot = pages.copy();
        for (int i = 0; i < 2000; i += 2) tree.remove(key(i));
        for (int i = 0; i < 500; i++) tree.put(key(i * 3), filled(70, -i));
        tree.clear();
        BPlusTree asOf = new BPlusTree(new ReadOnlyPageAccess(snapshot), FILE);
        assertEquals(past.size(), asOf.size());
        for (java.util.Map.Entry<byte[], byte[]> e : past.entrySet()) assertArrayEquals(e.getValue(), asOf.get(e.getKey()));
        ScanBatch batch = asOf.scan(key(100), true, key(200), 1000);
        assertEquals(100, batch.size());
        asOf.verify();
        assertEquals(0, snapshot.writeAcquires());
        assertThrows(UnsupportedOperationException.class, () -> asOf.put(b("x"), b("y")));
        snapshot.assertNothingHeld("past reads");
    }

    /** What the snapshot layer gives the tree: past page images, no writing. */
    private static final class ReadOnlyPageAccess implements dev.varve.core.page.PageAccess {
        private final TestPageAccess pages;

        ReadOnlyPageAccess(TestPageAccess pages) {
            this.pages = pages;
        }

        @Override
        public int pageSize() {
            return pages.pageSize();
        }

        @Override
        public Page acquireRead(long pageId) {
            return pages.acquireRead(pageId);
        }

        @Override
        public void releaseRead(Page page) {
            pages.releaseRead(page);
        }

        @Override
        public Page acquireWrite(long pageId) {
            throw new UnsupportedOperationException("read-only");
        }

        @Override
        public Page acquireNew(long pageId) {
            throw new UnsupportedOperationException("read-only");
        }

        @Override
        public void releaseWrite(Page page) {
            throw new UnsupportedOperationException("read-only");
        }
    }
}
