package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Removing or replacing a large value frees its overflow chain, and freeing erases (dirties) every page of it, about
 * 260 for 1 MiB at 4 KiB pages. A write reserves that head-room too, read from the leaves before it logs anything: a
 * batch that frees more than one change may dirty is refused naming dataRegionSize and changes nothing, instead of
 * waiting 120 s for a clean page that no checkpoint can make while it is applied and leaving the store refusing writes.
 */
@Timeout(120)
class FreedOverflowHeadroomTest {
    private static final int MIB = 1 << 20;
    private static final int WRITERS = 3;
    private static final int ROUNDS = 10;

    @TempDir
    Path dir;

    private VarveConfig config(long regionBytes) {
        return VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(regionBytes).walSyncMode(WalSyncMode.LOG_ONLY)
                .checkpointFrequency(Duration.ofMinutes(10))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    private static byte[] key(int i) {
        return ("big-" + i).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int i, int round) {
        byte[] v = new byte[MIB];
        Arrays.fill(v, (byte) (31 * i + round));
        return v;
    }

    /** The review's repro: an 8 MiB region with no dirty page, one batch removing nine 1 MiB values. */
    @Test
    void aBatchFreeingMoreThanTheRegionTakesIsRefusedAndChangesNothing() throws Exception {
        try (Varve store = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            for (int i = 0; i < 9; i++) t.put(key(i), value(i, 0));
            store.checkpoint().get(); // no dirty page: the batch alone is too much

            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> store.write(b -> {
                for (int i = 0; i < 9; i++) b.remove("t", key(i));
            }));
            assertTrue(e.getMessage().contains("dataRegionSize"), e.getMessage());
            for (int i = 0; i < 9; i++) assertArrayEquals(value(i, 0), t.get(key(i)), "value " + i + " after the refused batch");

            // the store still takes writes: the same removes a few at a time
            for (int i = 0; i < 9; i += 3) {
                int from = i;
                store.write(b -> {
                    for (int k = from; k < from + 3; k++) b.remove("t", key(k));
                });
            }
            for (int i = 0; i < 9; i++) assertNull(t.get(key(i)));
            t.put(key(0), value(0, 1));
        }
        try (Varve store = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            assertArrayEquals(value(0, 1), t.get(key(0)));
            for (int i = 1; i < 9; i++) assertNull(t.get(key(i)));
        }
    }

    /** A batch whose freed chains fit is applied: one 1 MiB value removed and one replaced by another in one batch. */
    @Test
    void aBatchReplacingLargeValuesThatFitIsApplied() throws Exception {
        try (Varve store = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            for (int i = 0; i < 3; i++) t.put(key(i), value(i, 0));
            store.write(b -> {
                b.remove("t", key(0));
                b.put("t", key(1), value(1, 1));
            });
            assertNull(t.get(key(0)));
            assertArrayEquals(value(1, 1), t.get(key(1)));
            assertArrayEquals(value(2, 0), t.get(key(2)));
        }
    }

    /**
     * Single puts replacing 1 MiB values in the smallest region (8 MiB), from three writers at once: each reserves the chain
     * it frees as well as the one it writes, so none waits for a clean page that no checkpoint can make.
     */
    @Test
    void concurrentPutsReplacingLargeValuesInTheSmallestRegion() throws Exception {
        try (Varve store = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
            try {
                Future<?>[] writers = new Future<?>[WRITERS];
                for (int w = 0; w < WRITERS; w++) {
                    int writer = w;
                    writers[w] = pool.submit(() -> {
                        for (int round = 0; round < ROUNDS; round++) t.put(key(writer), value(writer, round));
                        return null;
                    });
                }
                for (Future<?> f : writers) f.get();
            } finally {
                pool.shutdownNow();
            }
            for (int w = 0; w < WRITERS; w++) assertArrayEquals(value(w, ROUNDS - 1), t.get(key(w)));
        }
        try (Varve store = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE)) {
            for (int w = 0; w < WRITERS; w++) assertArrayEquals(value(w, ROUNDS - 1), store.table("t").get(key(w)));
        }
    }

    /**
     * Replay reserves the chains a logged batch frees too. Written in a 16 MiB region without a checkpoint after
     * five new 1 MiB values and a batch removing three checkpointed ones, then crashed, the store reopens in 8 MiB:
     * the five values hold ~1310 pages dirty when the batch is replayed, and its ~780 freed pages do not fit beside
     * them. Replay reserving only the batch's own 48 pages applied it there and failed the open ("recovery filled the
     * data region"); reserving what it may free, it checkpoints before the batch.
     */
    @Test
    void replayOfABatchFreeingLargeValuesCheckpointsBeforeItInsteadOfFillingTheRegion() throws Exception {
        try (Varve again = reopenedAfterABatchRemovingCheckpointedValues(t -> {
            for (int i = 3; i < 8; i++) t.put(key(i), value(i, 0));
        })) {
            for (int i = 3; i < 8; i++) assertArrayEquals(value(i, 0), again.table("t").get(key(i)), "value " + i);
        }
    }

    /**
     * As above with only small values after the checkpoint: the records replay reads before the batch are all small,
     * and the chains the batch frees are bounded by the checkpoint marker's largest value (1 MiB), not by them.
     * Replay bounding them by the records alone reserved a page for each of the three, applied the batch beside the
     * ~1,600 pages the small values hold dirty and failed the open ("recovery filled the data region").
     */
    @Test
    void replayBoundsTheChainsABatchFreesByTheCheckpointsLargestValueWhenTheRecordsBeforeItAreSmall() throws Exception {
        byte[] small = new byte[900];
        try (Varve again = reopenedAfterABatchRemovingCheckpointedValues(t -> {
            for (int i = 0; i < 3_900; i++) t.put(("small-" + i).getBytes(StandardCharsets.UTF_8), small); // ~1,600 pages dirty
        })) {
            assertArrayEquals(small, again.table("t").get("small-3899".getBytes(StandardCharsets.UTF_8)));
        }
    }

    /**
     * Writes three 1 MiB values in a 16 MiB region and checkpoints them (the chains a batch will free are on disk, not
     * dirty in memory), runs {@code between}, removes the three in one batch and crashes with no checkpoint since;
     * returns the store reopened in 8 MiB, the removals checked.
     */
    private Varve reopenedAfterABatchRemovingCheckpointedValues(Consumer<Table> between) throws Exception {
        Varve store = Varve.open(config(16L << 20), UnforcedFileIOFactory.INSTANCE);
        Table t = store.table("t");
        for (int i = 0; i < 3; i++) t.put(key(i), value(i, 0));
        store.checkpoint().get();
        between.accept(t);
        store.write(b -> {
            for (int i = 0; i < 3; i++) b.remove("t", key(i));
        });
        store.halt();
        Varve again = Varve.open(config(8L << 20), UnforcedFileIOFactory.INSTANCE);
        for (int i = 0; i < 3; i++) assertNull(again.table("t").get(key(i)), "removed value " + i);
        return again;
    }
}
