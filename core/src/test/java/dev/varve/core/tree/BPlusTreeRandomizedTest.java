package dev.varve.core.tree;

import org.junit.jupiter.api.Timeout;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random operation sequences against a {@link TreeMap} model, with {@link BPlusTree#verify()} along the way. Each
 * seed runs thousands of inserts, overwrites, removes, point reads and scans (every bound combination, resumed across
 * batches with writes in between), in phases that grow the tree and shrink it again so splits, merges and root
 * collapses all happen; it ends by removing everything.
 *
 * <p>Subclasses may run the same sequences over another {@link PageAccess} by overriding {@link #newPages(int)}.
 * Rerun one case with {@code -Dvarve.tree.seed=S -Dvarve.tree.pageSize=P}; run more seeds with
 * {@code -Dvarve.tree.seeds=N}.
 */
@Timeout(180)
public class BPlusTreeRandomizedTest {
    static final int FILE_ID = PageId.fileId(3, 7);
    private static final boolean TRACE = Boolean.getBoolean("varve.tree.trace");
    private static final int OPS_PER_SEED = Integer.getInteger("varve.tree.ops", 5000);
    private static final int VERIFY_EVERY = Integer.getInteger("varve.tree.verifyEvery", 150);

    /** The pages a tree under test lives in; override to test another page memory. */
    protected PageAccess newPages(int pageSize) {
        return new TestPageAccess(pageSize);
    }

    @ParameterizedTest(name = "pageSize={0}")
    @ValueSource(ints = {1024, 4096, 16384})
    void randomOperationsMatchTreeMap(int pageSize) {
        String only = System.getProperty("varve.tree.seed");
        if (only != null) {
            String size = System.getProperty("varve.tree.pageSize");
            if (size == null || Integer.parseInt(size) == pageSize) runSeed(pageSize, Long.parseLong(only));
            return;
        }
        int seeds = Integer.getInteger("varve.tree.seeds", pageSize == 16384 ? 8 : 14);
        for (int i = 0; i < seeds; i++) runSeed(pageSize, i == 0 ? System.nanoTime() : 1000L * pageSize + i);
    }

    private void runSeed(int pageSize, long seed) {
        try {
            // odd seeds: many mostly short keys (wide, larger trees); even seeds: few keys, many long (deep trees)
            boolean wide = (seed & 1) == 1;
            int pool = wide ? 2000 + (int) Math.floorMod(seed, 3000L) : 200 + (int) Math.floorMod(seed, 900L);
            new Run(newPages(pageSize), new Workload(seed, pageSize, pool, wide ? 4 : 35)).run();
        } catch (Throwable e) {
            throw new AssertionError("seed " + seed + ", page size " + pageSize + " (rerun: -Dvarve.tree.seed=" + seed
                    + " -Dvarve.tree.pageSize=" + pageSize + "): " + e, e);
        }
    }

    /** One seeded run. */
    private static final class Run {
        private final PageAccess pages;
        private final Workload w;
        private final BPlusTree tree;
        private final TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
        private int maxHeight;
        /** An open scan advanced one batch at a time between other operations. */
        private byte[] cursorFrom;
        private boolean cursorInclusive;
        private byte[] cursorTo;
        private boolean cursorOpen;

        Run(PageAccess pages, Workload w) {
            this.pages = pages;
            this.w = w;
            BPlusTree.format(pages, FILE_ID);
            this.tree = new BPlusTree(pages, FILE_ID);
        }

        void run() {
            for (int op = 0; op < OPS_PER_SEED; op++) {
                int phase = (op / 500) % 3;
                int removeShare = phase == 0 ? 15 : phase == 1 ? 35 : 70;
                int r = w.random.nextInt(100);
                if (r < 60) {
                    if (w.random.nextInt(100) < removeShare) remove(w.key());
                    else put(w.key(), w.value());
                } else if (r < 85) {
                    byte[] key = w.key();
                    assertArrayEquals(model.get(key), tree.get(key), "get");
                } else if (r < 95) {
                    scan();
                } else {
                    advanceCursor();
                }
                held("op " + op);
                maxHeight = Math.max(maxHeight, tree.height());
                if (op % VERIFY_EVERY == 0) check();
                if (TRACE) System.out.println("op " + op + " ok, height " + tree.height() + ", pages " + tree.pageCount());
            }
            check();
            checkScan(null, true, null, 1 + w.random.nextInt(100), Integer.MAX_VALUE);
            List<byte[]> keys = new ArrayList<>(model.keySet());
            Collections.shuffle(keys, new Random(w.random.nextLong()));
            int i = 0;
            for (byte[] key : keys) {
                remove(key);
                if (++i % (VERIFY_EVERY * 2) == 0) check();
            }
            check();
            assertEquals(0, tree.size());
            assertEquals(1, tree.height(), "height after removing everything (max was " + maxHeight + ")");
            assertEquals(tree.pageCount() - 2, tree.freePageCount(), "every page but meta and root is free");
            assertTrue(tree.scan(null, true, null, 10).isEmpty());
        }

        private void put(byte[] key, byte[] value) {
            if (TRACE) System.out.println("put key " + key.length + " value " + value.length + " present " + model.containsKey(key));
            assertEquals(model.put(key, value) != null, tree.put(key, value), "put replaced");
        }

        private void remove(byte[] key) {
            if (TRACE) System.out.println("remove key " + key.length + " present " + model.containsKey(key));
            assertEquals(model.remove(key) != null, tree.remove(key), "remove found");
        }

        private void check() {
            tree.verify();
            held("verify");
            assertEquals(model.size(), tree.size(), "size");
        }

        private void held(String after) {
            if (pages instanceof TestPageAccess) ((TestPageAccess) pages).assertNothingHeld(after);
        }

        private byte[] bound() {
            int kind = w.random.nextInt(4);
            if (kind == 0) return null;
            if (kind == 1 && !model.isEmpty()) return w.random.nextBoolean() ? model.firstKey() : model.lastKey();
            return w.key();
        }

        private void scan() {
            checkScan(bound(), w.random.nextBoolean(), bound(), 1 + w.random.nextInt(20), 200);
        }

        /** Pages through [from, to) in batches and compares with the model, up to about {@code limit} entries. */
        private void checkScan(byte[] from, boolean inclusive, byte[] to, int batchSize, int limit) {
            Iterator<Map.Entry<byte[], byte[]>> expected = range(from, inclusive, to).entrySet().iterator();
            byte[] position = from;
            boolean positionInclusive = inclusive;
            for (int seen = 0; seen < limit; ) {
                ScanBatch batch = tree.scan(position, positionInclusive, to, batchSize);
                held("scan");
                for (int i = 0; i < batch.size(); i++, seen++) {
                    assertTrue(expected.hasNext(), "scan returned an entry past the range's end");
                    Map.Entry<byte[], byte[]> e = expected.next();
                    assertArrayEquals(e.getKey(), batch.key(i), "scan key");
                    assertArrayEquals(e.getValue(), batch.value(i), "scan value");
                }
                assertEquals(expected.hasNext(), batch.hasMore(), "hasMore");
                long bytes = 0;
                for (int i = 0; i < batch.size(); i++) bytes += batch.key(i).length + batch.value(i).length;
                assertTrue(batch.size() == batchSize || !batch.hasMore() || bytes >= TreeScanner.MAX_BATCH_BYTES,
                        "short batch with more to come, of " + bytes + " bytes");
                assertTrue(batch.size() <= 1 || bytes - batch.value(batch.size() - 1).length - batch.lastKey().length < TreeScanner.MAX_BATCH_BYTES,
                        "a batch went on past its byte limit");
                if (!batch.hasMore()) return;
                position = batch.lastKey();
                positionInclusive = false;
            }
        }

        /** One batch of the open cursor; writes may have happened since the last one. */
        private void advanceCursor() {
            if (!cursorOpen) {
                cursorFrom = bound();
                cursorInclusive = w.random.nextBoolean();
                cursorTo = bound();
                cursorOpen = true;
            }
            int batchSize = 1 + w.random.nextInt(10);
            ScanBatch batch = tree.scan(cursorFrom, cursorInclusive, cursorTo, batchSize);
            held("cursor");
            Iterator<Map.Entry<byte[], byte[]>> expected = range(cursorFrom, cursorInclusive, cursorTo).entrySet().iterator();
            for (int i = 0; i < batch.size(); i++) {
                Map.Entry<byte[], byte[]> e = expected.next();
                assertArrayEquals(e.getKey(), batch.key(i), "cursor key");
                assertArrayEquals(e.getValue(), batch.value(i), "cursor value");
            }
            assertEquals(expected.hasNext(), batch.hasMore(), "cursor hasMore");
            if (batch.hasMore()) {
                cursorFrom = batch.lastKey();
                cursorInclusive = false;
            } else {
                cursorOpen = false;
            }
        }

        private NavigableMap<byte[], byte[]> range(byte[] from, boolean inclusive, byte[] to) {
            if (from == null) return to == null ? model : model.headMap(to, false);
            if (to == null) return model.tailMap(from, inclusive);
            if (Arrays.compareUnsigned(from, to) > 0) return Collections.emptyNavigableMap();
            return model.subMap(from, inclusive, to, false);
        }
    }
}
