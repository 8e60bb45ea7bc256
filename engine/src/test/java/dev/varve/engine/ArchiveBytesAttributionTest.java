package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SnapshotInfo#archiveBytes()} under diff capture: each pre-state counts the bytes it takes (a diff its share
 * of its pack), so the live snapshots' figures add up to the archive, not to several times it (as when every
 * pre-state counted as a whole page, which also made a byte budget drop a fraction of the excess per round); the
 * figures are the same after a reopen and after a crash, whose recovery recounts them from the Maplog.
 */
@Timeout(120)
class ArchiveBytesAttributionTest {
    private static final int KEYS = 3000;
    private static final long SMALL_SEGMENT = 256L << 10;
    @TempDir
    Path dir;

    private VarveConfig config() {
        return SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().archiveSegmentSize(1L << 20)
                .checkpointFrequency(Duration.ofHours(1)).retention(RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll(), Retention.keepAll())).build();
    }

    /**
     * One level: with several, a lower-rank snapshot's pre-states that higher levels record too stay until the
     * higher-rank snapshots reading them go as well, so a budget can take more than one round there.
     */
    private VarveConfig oneLevel(RankTreePolicy policy) {
        return config().toBuilder().archiveSegmentSize(SMALL_SEGMENT).retention(policy).build();
    }

    @Test
    void theSnapshotsFiguresAddUpToTheArchiveAndSurviveReopenAndCrash() {
        List<SnapshotInfo> before;
        try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(key(k), value(k, 0));
            store.checkpoint().join();
            rounds(store, t, 1, 600); // a few keys per snapshot: most pre-states are diffs of a few chunks
            store.checkpoint().join(); // every capture archived
            before = store.snapshots();
            assertAddsUpToTheArchive(store, "in the run that wrote them");
        }
        try (Varve reopened = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            assertEquals(before, reopened.snapshots(), "recounted at open to the same figures");
            rounds(reopened, reopened.table("t"), 601, 700);
            reopened.checkpoint().join();
            before = reopened.snapshots();
            // after the mark, recovery replays these — and the writes before the first, whose pre-states are the
            // latest snapshot's (captured again by the replay, not necessarily into the same packs)
            rounds(reopened, reopened.table("t"), 701, 760);
            reopened.halt();
        }
        try (Varve recovered = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            int covered = before.size() - 1;
            assertEquals(before.subList(0, covered), recovered.snapshots().subList(0, covered), "what the mark covered is recounted to the same figures");
            recovered.checkpoint().join();
            assertAddsUpToTheArchive(recovered, "after crash recovery");
        }
    }

    @Test
    void aBudgetDropsWhatItsExcessNeedsInOneRound() {
        long archive;
        try (Varve store = Varve.open(oneLevel(RankTreePolicy.levels(Retention.keepAll())), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(key(k), value(k, 0));
            store.checkpoint().join();
            rounds(store, t, 1, 600);
            store.checkpoint().join();
            archive = store.metrics().archiveBytes();
        }
        long budget = archive / 3;
        try (Varve store = Varve.open(oneLevel(RankTreePolicy.levels(Retention.keepAll()).withBudget(budget)), UnforcedFileIOFactory.INSTANCE)) {
            store.snapshotNow(); // the budget is applied: the oldest snapshots go until their bytes cover the excess
            store.checkpoint().join(); // and reclamation gives their segments back
            long after = store.metrics().archiveBytes();
            // whole segments go: what the dropped snapshots leave in the segment reclamation stops at stays
            assertTrue(after <= budget + 2 * SMALL_SEGMENT, "archive " + archive + " bytes over a budget of " + budget + ": one round left " + after);
        }
    }

    /** The figures add up to no more than the archive, and to most of it (the Skippy levels are no snapshot's). */
    private static void assertAddsUpToTheArchive(Varve store, String when) {
        long sum = store.snapshots().stream().mapToLong(SnapshotInfo::archiveBytes).sum();
        long archive = store.metrics().archiveBytes();
        assertTrue(sum <= archive && sum >= archive * 8 / 10, when + ": the snapshots' archive bytes add up to " + sum + ", the archive holds " + archive);
    }

    private static void rounds(Varve store, Table t, int from, int to) {
        for (int round = from; round <= to; round++) {
            for (int i = 0; i < 10; i++) { // in the hot first tenth of the keys: each page's pre-states chain as diffs
                int k = (round * 37 + i * 31) % (KEYS / 10);
                t.put(key(k), value(k, round));
            }
            // at every level: each level's volume stores its own pre-states, in packs of its own
            store.snapshotNow(1 + round % store.config().retention().levelCount());
        }
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int k, int round) {
        return (k + "/" + round + "/" + "x".repeat(80)).getBytes(StandardCharsets.UTF_8);
    }
}
