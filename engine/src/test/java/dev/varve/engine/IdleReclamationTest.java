package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the policy drops while a store writes nothing — a keepFor rule ageing, a byte budget over its size — is given
 * back without new writes: by the next checkpoint, which finds nothing to write but still reclaims, and by the next
 * open, which reclaims what the last run dropped and did not get to. (A budget store that stopped writing used to drop
 * more of its oldest snapshots at every open and checkpoint while its archive kept every byte.)
 */
@Timeout(120)
class IdleReclamationTest {
    /** Snapshots each history below declares, one per write. */
    private static final int SNAPSHOTS = 3000;

    @TempDir
    Path dir;

    /** A store under {@code policy}, idle since its last checkpoint, with what aged out since dropped; its config. */
    private record Aged(Varve store, VarveConfig config) {
    }

    /**
     * Opens a store under {@code policy(keepFor)}, writes {@code history} ({@link #SNAPSHOTS} snapshots), checkpoints
     * twice — the history lies below the first mark, so the next reclamation may take all of it; the first wrote a WAL
     * record after its mark, the second writes none: the store is idle from there on — then waits, writing nothing,
     * until the rule has left {@code left} snapshots. On a busy machine the writes can outlast keepFor: snapshots then
     * age out before the store is idle and those checkpoints reclaim them, so the attempt shows nothing about an idle
     * store; it is closed and the next one runs in a new directory under four times the keepFor.
     */
    private Aged aged(Function<Duration, RankTreePolicy> policy, Consumer<Varve> history, int left) throws InterruptedException {
        for (Duration keepFor = Duration.ofMillis(300); keepFor.toSeconds() < 20; keepFor = keepFor.multipliedBy(4)) {
            VarveConfig config = VarveConfig.builder().path(dir.resolve("keepFor-" + keepFor.toMillis())).dataRegionSize(16L << 20).partitions(2)
                    .checkpointFrequency(Duration.ofHours(1)).archiveSegmentSize(256L << 10).retention(policy.apply(keepFor))
                    .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
            Varve store = Varve.open(config);
            history.accept(store);
            store.checkpoint().join();
            store.checkpoint().join();
            if (store.snapshots().size() < SNAPSHOTS) {
                store.close(); // aged out while writing
                continue;
            }
            while (store.snapshots().size() > left) Thread.sleep(50); // the archiver ages the rule
            return new Aged(store, config);
        }
        return fail("the writes outlasted every keepFor up to 19.2 s");
    }

    /** A few MB of history: 500 keys overwritten six times, a snapshot after each write. */
    private static void overwrites(Varve store) {
        for (int i = 0; i < SNAPSHOTS; i++) {
            byte[] key = ("k" + i % 500).getBytes(StandardCharsets.UTF_8);
            store.writeAndSnapshot(b -> b.put("t", key, new byte[200]));
        }
    }

    @Test
    void aCheckpointWithNothingToWriteGivesBackWhatAgedOut() throws InterruptedException {
        try (Varve store = aged(keepFor -> RankTreePolicy.levels(Retention.keepFor(keepFor)), IdleReclamationTest::overwrites, 1).store()) {
            long before = store.metrics().archiveBytes();
            long reclaimed = store.metrics().archiveBytesReclaimed();
            store.checkpoint().join(); // nothing written since the last one
            long after = store.metrics().archiveBytes();
            assertTrue(store.metrics().archiveBytesReclaimed() > reclaimed && after < before / 4,
                    "archive " + before + " -> " + after + " bytes after an idle checkpoint, reclaimed " + reclaimed + " -> "
                            + store.metrics().archiveBytesReclaimed());
        }
    }

    /**
     * I8 across the new reclamation points: a rank-2 snapshot taken mid-history, kept by the policy's second level,
     * still reads exactly what it held after an idle checkpoint reclaimed what its neighbours left, and after a crash
     * and the open that reclaims again; no live mapping reaches reclaimed data.
     */
    @Test
    void whatAKeptSnapshotNeedsSurvivesIdleAndOpenReclamation() throws InterruptedException {
        Map<String, Integer> model = new TreeMap<>();
        long[] kept = new long[1];
        Aged aged = aged(keepFor -> RankTreePolicy.levels(Retention.keepFor(keepFor), Retention.keepAll()), store -> {
            model.clear();
            for (int i = 0; i < SNAPSHOTS; i++) {
                String k = "k" + i % 500;
                byte[] value = java.nio.ByteBuffer.allocate(200).putInt(0, i).array();
                if (i == 1500) kept[0] = store.writeAndSnapshot(b -> b.put("t", k.getBytes(StandardCharsets.UTF_8), value), 2);
                else store.writeAndSnapshot(b -> b.put("t", k.getBytes(StandardCharsets.UTF_8), value));
                if (i <= 1500) model.put(k, i);
            }
        }, 2); // the rank-2 snapshot and the latest stay
        Varve store = aged.store();
        long reclaimed = store.metrics().archiveBytesReclaimed();
        store.checkpoint().join();
        assertTrue(store.metrics().archiveBytesReclaimed() > reclaimed, "the idle checkpoint reclaimed nothing");
        assertReads(store, kept[0], model);
        store.halt();
        try (Varve reopened = Varve.open(aged.config())) {
            assertReads(reopened, kept[0], model);
        }
    }

    private static void assertReads(Varve store, long snapshot, Map<String, Integer> model) {
        assertEquals(java.util.List.of(), store.danglingArchiveMappings(), "I8");
        try (SnapshotView v = store.asOf(snapshot)) {
            for (Map.Entry<String, Integer> e : model.entrySet())
                assertEquals(e.getValue(), java.nio.ByteBuffer.wrap(v.table("t").get(e.getKey().getBytes(StandardCharsets.UTF_8))).getInt(0),
                        "snapshot " + snapshot + ", " + e.getKey());
        }
    }

    @Test
    void openGivesBackWhatTheLastRunDroppedAndDidNotReclaim() throws InterruptedException {
        Aged aged = aged(keepFor -> RankTreePolicy.levels(Retention.keepFor(keepFor)), IdleReclamationTest::overwrites, 1);
        long before = aged.store().metrics().archiveBytes();
        aged.store().halt(); // no shutdown checkpoint: the drops stand, their bytes unreclaimed
        try (Varve reopened = Varve.open(aged.config())) {
            long after = reopened.metrics().archiveBytes();
            assertTrue(after < before / 4, "archive " + before + " bytes before the crash, " + after + " after open");
        }
    }
}
