package dev.varve.core.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Key heads in the slot array ({@link SlottedPage#keyHead}): they order keys when they differ, and only then. */
@Timeout(120)
class KeyHeadTest {
    private static final int FILE = PageId.fileId(3, 1);

    /** Keys over a tiny alphabet that includes 0x00 and 0xFF, up to 11 bytes: prefixes and padding collide often. */
    private static byte[] randomKey(SplittableRandom random) {
        byte[] key = new byte[random.nextInt(12)];
        byte[] alphabet = {0, 1, (byte) 0x7F, (byte) 0x80, (byte) 0xFF};
        for (int i = 0; i < key.length; i++) key[i] = alphabet[random.nextInt(alphabet.length)];
        return key;
    }

    @Test
    void headsOrderTwoKeysAsTheKeysDoWheneverTheHeadsDiffer() {
        SplittableRandom random = new SplittableRandom(7);
        int decidedByHeads = 0;
        for (int n = 0; n < 200_000; n++) {
            byte[] a = randomKey(random);
            byte[] b = randomKey(random);
            long ha = SlottedPage.keyHead(a, a.length);
            long hb = SlottedPage.keyHead(b, b.length);
            if (ha == hb) continue;
            decidedByHeads++;
            assertEquals(Integer.signum(Arrays.compareUnsigned(a, b)), Integer.signum(Long.compareUnsigned(ha, hb)),
                    Arrays.toString(a) + " vs " + Arrays.toString(b));
        }
        assertTrue(decidedByHeads > 100_000, "pairs decided by their heads: " + decidedByHeads);
        assertEquals(SlottedPage.keyHead(new byte[] {5}, 1), SlottedPage.keyHead(new byte[] {5, 0}, 2),
                "zero padding: equal heads, different keys");
        assertEquals(SlottedPage.keyHead(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9}, 8),
                SlottedPage.keyHead(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 8), "a head holds the first 8 bytes of the length given");
    }

    /**
     * Keys that share their heads (zero padding, one common 8-byte prefix) in leaves and, once they split, in inner
     * pages: every key is found, absent keys between them are not, and a scan returns them in order.
     */
    @Test
    void keysWithEqualHeadsAreToldApartByTheirWholeKeys() {
        TestPageAccess pages = new TestPageAccess(1024);
        BPlusTree.format(pages, FILE);
        BPlusTree tree = new BPlusTree(pages, FILE);
        TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
        SplittableRandom random = new SplittableRandom(11);
        List<byte[]> absent = new ArrayList<>();
        for (int n = 0; n < 6_000; n++) {
            byte[] key = random.nextBoolean() ? randomKey(random) : commonPrefixKey(random);
            if (random.nextInt(4) == 0) {
                if (!model.containsKey(key)) absent.add(key);
                continue;
            }
            byte[] value = new byte[random.nextInt(40)];
            random.nextBytes(value);
            tree.put(key, value);
            model.put(key, value);
        }
        tree.verify();
        assertTrue(tree.height() >= 2, "inner pages hold separators with equal heads too: height " + tree.height());
        for (var e : model.entrySet()) assertArrayEquals(e.getValue(), tree.get(e.getKey()), Arrays.toString(e.getKey()));
        for (byte[] key : absent) if (!model.containsKey(key)) assertNull(tree.get(key), Arrays.toString(key));
        List<byte[]> scanned = new ArrayList<>();
        ScanBatch batch = tree.scan(null, true, null, 1_000);
        while (true) {
            for (int i = 0; i < batch.size(); i++) scanned.add(batch.key(i));
            if (!batch.hasMore()) break;
            batch = tree.scan(batch.lastKey(), false, null, 1_000);
        }
        assertEquals(model.size(), scanned.size());
        int i = 0;
        for (byte[] key : model.keySet()) assertArrayEquals(key, scanned.get(i++));
        for (byte[] key : new ArrayList<>(model.keySet())) {
            if (random.nextBoolean()) {
                assertTrue(tree.remove(key));
                model.remove(key);
            }
        }
        tree.verify();
        for (var e : model.entrySet()) assertArrayEquals(e.getValue(), tree.get(e.getKey()), Arrays.toString(e.getKey()));
    }

    private static byte[] commonPrefixKey(SplittableRandom random) {
        byte[] tail = randomKey(random);
        byte[] key = Arrays.copyOf("tenant-7".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 8 + tail.length);
        System.arraycopy(tail, 0, key, 8, tail.length);
        return key;
    }

    @Test
    void verifyRefusesASlotWhoseHeadIsNotItsKeys() {
        TestPageAccess pages = new TestPageAccess(4096);
        BPlusTree.format(pages, FILE);
        BPlusTree tree = new BPlusTree(pages, FILE);
        for (int i = 0; i < 20; i++) tree.put(new byte[] {(byte) i, 1, 2}, new byte[] {(byte) i});
        tree.verify();
        Page leaf = pages.peek(PageId.of(FILE, 1));
        assertEquals(PageHeader.TYPE_LEAF, leaf.type());
        leaf.putLong(SlottedPage.SLOTS_OFFSET + SlottedPage.SLOT_BYTES * 3 + SlottedPage.HEAD_IN_SLOT, 0);
        CorruptTreeException e = assertThrows(CorruptTreeException.class, tree::verify);
        assertTrue(e.getMessage().contains("slot 3") && e.getMessage().contains("key head"), e.getMessage());
    }
}
