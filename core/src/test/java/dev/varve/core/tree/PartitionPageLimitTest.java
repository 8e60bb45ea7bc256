package dev.varve.core.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.PartitionFullException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A partition file at its page limit ({@link BPlusTree#MAX_PAGES}, 8 TiB at 4 KiB pages): the allocator is started a
 * few pages short of it by raising the meta page's page count (the pages below are never touched), so the real limit
 * is reached without writing 8 TiB. A put that may need more pages than are left is refused as a full partition —
 * not as damage — before it changes a byte; puts that fit, and puts that reuse freed pages, go on.
 */
@Timeout(60)
class PartitionPageLimitTest {
    private static final int FILE = PageId.fileId(7, 3);

    private final TestPageAccess pages = new TestPageAccess(4096);
    private final BPlusTree tree;

    PartitionPageLimitTest() {
        BPlusTree.format(pages, FILE);
        tree = new BPlusTree(pages, FILE);
        for (int i = 0; i < 300; i++) tree.put(key(i), new byte[100]); // a tree of two levels
    }

    private static byte[] key(int i) {
        return String.format("key-%08d", i).getBytes(StandardCharsets.UTF_8);
    }

    /** Moves the end of the file to {@code left} pages short of the limit. */
    private void leave(int left) {
        Page meta = pages.acquireWrite(PageId.of(FILE, MetaPage.META_INDEX));
        try {
            MetaPage.pageCount(meta, BPlusTree.MAX_PAGES - left);
        } finally {
            pages.releaseWrite(meta);
        }
    }

    /** The put is refused as a full partition, naming it and the limit, and no page changed. */
    private PartitionFullException refused(byte[] key, byte[] value) {
        TestPageAccess before = pages.copy();
        PartitionFullException e = assertThrows(PartitionFullException.class, () -> tree.put(key, value));
        pages.assertNothingHeld("a refused put");
        assertNull(pages.firstDifference(before), "a refused put changed a page");
        return e;
    }

    @Test
    void anOverflowChainPastTheLimitIsRefusedBeforeItsFirstPage() {
        assertEquals(2, tree.height());
        leave(20);
        long entries = tree.size();
        PartitionFullException e = refused(key(5000), new byte[1 << 20]);
        assertTrue(e.getMessage().contains("partition 3 of table id 7"), e.getMessage());
        assertTrue(e.getMessage().contains(String.valueOf(BPlusTree.MAX_PAGES)), e.getMessage());
        assertEquals(20, tree.pagesLeft());
        assertEquals(entries, tree.size());
        tree.put(key(5000), new byte[4000]); // a put that fits still goes in
        assertArrayEquals(new byte[4000], tree.get(key(5000)));
    }

    @Test
    void aSplitPastTheLimitIsRefusedAndFreedPagesAreTakenAgain() {
        byte[] large = new byte[100_000];
        tree.put(key(9000), large);
        leave(0);
        assertEquals(0, tree.pagesLeft());
        byte[] fresh = "key-00000150+".getBytes(StandardCharsets.UTF_8);
        refused(fresh, new byte[100]);                    // a new key may split its leaf
        tree.put(key(9000), large.clone());               // a replacement takes the chain it frees
        assertTrue(tree.remove(key(9000)));               // removing frees the chain
        assertEquals(BPlusTree.maxOverflowPages(4096) > 0, tree.pagesLeft() > 0);
        tree.put(fresh, new byte[100]);                   // and its pages take the next puts
        assertEquals(100, tree.get(fresh).length);
        int added = 0;
        for (int i = 10_000; ; i++) {
            try {
                tree.put(key(i), new byte[100]);
                added++;
            } catch (PartitionFullException full) {
                break;
            }
        }
        assertTrue(added > 0);
        refused(key(20_000), new byte[100]);              // at the limit the refusal still changes nothing
        assertTrue(tree.pagesLeft() < tree.height() + 1);
        assertEquals(Integer.MAX_VALUE, BPlusTree.MAX_PAGES);
    }

    /**
     * What a caller checks before it commits to a batch of puts (the engine, before it logs them): when
     * {@link BPlusTree#roomAfterPuts} says they fit, none of them is refused, whatever their keys — long keys that
     * split inner pages and grow the tree included.
     */
    @Test
    void putsThatRoomAfterPutsAdmitsAreNeverRefused() {
        Random random = new Random(42);
        for (int round = 0; round < 30; round++) {
            TestPageAccess fresh = new TestPageAccess(1024);
            BPlusTree.format(fresh, FILE);
            BPlusTree t = new BPlusTree(fresh, FILE);
            int before = random.nextInt(400);
            for (int i = 0; i < before; i++) t.put(randomBytes(random, 1 + random.nextInt(256)), randomBytes(random, random.nextInt(2000)));
            List<byte[][]> puts = new ArrayList<>();
            long valueBytes = 0;
            for (int i = 1 + random.nextInt(60); i > 0; i--) {
                byte[] value = randomBytes(random, random.nextInt(3) == 0 ? random.nextInt(3000) : random.nextInt(40));
                puts.add(new byte[][] {randomBytes(random, 1 + random.nextInt(256)), value});
                valueBytes += value.length;
            }
            long room = t.roomAfterPuts(puts.size(), valueBytes);
            t.limitPages((int) (t.maxPages() - room)); // exactly enough, by the bound
            assertEquals(0, t.roomAfterPuts(puts.size(), valueBytes));
            for (byte[][] put : puts) t.put(put[0], put[1]);
            assertTrue(t.pagesLeft() >= 0);
        }
    }

    private static byte[] randomBytes(Random random, int length) {
        byte[] b = new byte[length];
        random.nextBytes(b);
        return b;
    }
}
