package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.FaultyFileIOFactory.Op;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Power loss at each step of a lazy-ranking copy — while the ranked extent is written, at its rename, at the fsync
 * of the move log, after the start marker, at the end marker — with un-fsynced writes dropped or torn: the
 * re-ranked snapshot reads right after recovery (from its old level, or from the copy the recovered checkpoint
 * made), no half-written or orphaned extent stays behind, and the next checkpoint copies it if recovery had to
 * drop the copy.
 */
@Timeout(600)
class LazyRankingCrashTest {
    private static final int KEYS = 2000;
    @TempDir
    Path dir;

    enum Stage {
        EXTENT_WRITE(op -> op.kind() == Kind.WRITE && op.names("extent-")),
        EXTENT_RENAME(op -> op.kind() == Kind.MOVE && op.names("extent-")),
        MOVE_LOG_FSYNC(op -> op.kind() == Kind.FORCE && op.names("moves.log")),
        AFTER_START_MARKER(CrashPoints.pageWriteAfterStartMarker(1)),
        END_MARKER(CrashPoints.endMarkerMove());

        final Predicate<Op> where;

        Stage(Predicate<Op> where) {
            this.where = where;
        }
    }

    private VarveConfig config() {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).skippyNodeEntries(16)
                .archiveSegmentSize(256L << 10).snapshotPageWindow(0)
                .retention(RankTreePolicy.levels(Retention.keepLast(8), Retention.keepAll())).walSegmentSize(4L << 20).build();
    }

    @ParameterizedTest
    @EnumSource(Stage.class)
    void reRankedSnapshotSurvivesACrashAnywhereInItsCopy(Stage stage) throws Exception {
        FaultyFileIOFactory io = new FaultyFileIOFactory(4242 + stage.ordinal());
        long v;
        Varve store = Varve.open(config(), io);
        Table t = store.table("bulk");
        putAll(t, 0);
        store.snapshotNow(2); // its level-2 pre-states are v's diff bases
        putAll(t, 1);
        v = store.snapshotNow(1);
        putAll(t, 2);
        store.checkpoint().get(30, TimeUnit.SECONDS); // everything so far is durable
        store.rank(v, 2); // the window is 0: the next checkpoint copies v
        putAll(t, 3);
        store.sync(); // under LOG_ONLY a power loss keeps what was forced: the crashes below come before the checkpoint's force
        io.crashAt(stage.where);
        ExecutionException failed = assertThrows(ExecutionException.class, () -> store.checkpoint().get(30, TimeUnit.SECONDS));
        assertNotNull(io.crashedAt(), "the checkpoint failed without the crash: " + failed.getCause());
        store.halt();
        io.powerLoss();

        Agents stepped = Agents.invoked(); // no checkpoint runs before the test steps one: open's leftovers are visible
        try (Varve reopened = Varve.open(config(), io, stepped)) {
            checkV(reopened, v, "after recovery from a crash at " + io.crashedAt());
            assertEquals(List.of(), reopened.danglingArchiveMappings());
            assertEquals(0, extentFiles(".creating"), "no half-written extent is left");
            CompletableFuture<CheckpointStats> next = reopened.checkpoint(); // copies v now if the recovered state had not
            while (!next.isDone()) stepped.invokeAll();
            next.get(30, TimeUnit.SECONDS);
            assertEquals(1, extentFiles(".dat"), "v's copy exists exactly once");
            checkV(reopened, v, "after the next checkpoint");
        }
        try (Varve again = Varve.open(config())) {
            checkV(again, v, "after a clean reopen");
        }
    }

    private long extentFiles(String suffix) throws Exception {
        try (var files = Files.walk(dir)) {
            return files.filter(p -> p.getFileName().toString().startsWith("extent-") && p.getFileName().toString().endsWith(suffix)).count();
        }
    }

    private static void checkV(Varve store, long v, String when) {
        assertTrue(store.snapshots().stream().anyMatch(s -> s.id() == v && s.rank() == 2), when + ": v is live with rank 2");
        try (SnapshotView past = store.asOf(v)) {
            Table t = past.table("bulk");
            for (int k = 0; k < KEYS; k++) assertArrayEquals(value(k, 1), t.get(key(k)), when + ": key " + k + " as of v");
        }
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int k, int generation) {
        byte[] v = new byte[100];
        java.util.Arrays.fill(v, (byte) k);
        v[99] = (byte) generation;
        return v;
    }

    private static void putAll(Table t, int generation) {
        for (int k = 0; k < KEYS; k++) t.put(key(k), value(k, generation));
    }
}
