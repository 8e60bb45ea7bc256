package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.FaultyFileIOFactory.Op;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Power loss while diff capture archives (the fault-injection seam): the process dies at a Pagelog write (a pack of
 * diffs or a whole page, from the archiver or a checkpoint's flush), a Pagelog fsync, a Maplog write, or the delete of
 * a reclaimed segment — in both recovery modes, with a snapshot after every FSYNC batch on a hot key set (chains of
 * every length to 3) under keepLast(60) on small segments, so reclamation runs. After the reopen, every acknowledged
 * write is there, every live snapshot is an acknowledged one and reads back exactly its model, and the newest
 * acknowledged snapshots are live. (The Maplog case found that a power loss while the Maplog moved on to a new part
 * left a store that refused to open: the part before had not been forced. Such parts are now a torn tail.)
 */
@Timeout(600)
class DiffCaptureCrashTest {
    private static final int KEYS = 300;
    private static final int KEEP = 60;

    @TempDir
    Path dir;

    /** Where the process dies. */
    enum Point {
        PAGELOG_WRITE(Kind.WRITE, "pagelog-", 40),
        PAGELOG_FSYNC(Kind.FORCE, "pagelog-", 3),
        MAPLOG_WRITE(Kind.WRITE, "maplog-", 60),
        SEGMENT_DELETE(Kind.DELETE, "pagelog-", 1),
        /** The first record written into a new segment (its header went to the temp file before): the segment before is unforced. */
        NEXT_SEGMENT_WRITE(Kind.WRITE, "pagelog-00000003.log", 2);

        final Kind kind;
        final String file;
        final int nth;

        Point(Kind kind, String file, int nth) {
            this.kind = kind;
            this.file = file;
            this.nth = nth;
        }

        Predicate<Op> predicate() {
            return FaultyFileIOFactory.nth(nth, op -> op.kind() == kind && op.names(file));
        }
    }

    /**
     * Every point with chains of every length to 3; the Pagelog's points again with chains to 20, whose versions at
     * positions 8 and 16 are skip links (diffs against the version 8 back).
     */
    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (RecoveryMode mode : RecoveryMode.values()) for (Point p : Point.values()) out.add(Arguments.of(mode, p, 3));
        for (RecoveryMode mode : RecoveryMode.values())
            for (Point p : new Point[] {Point.PAGELOG_WRITE, Point.PAGELOG_FSYNC, Point.SEGMENT_DELETE}) out.add(Arguments.of(mode, p, 20));
        return out.stream();
    }

    @ParameterizedTest(name = "{0}, crash at {1}, chains to {2}")
    @MethodSource("cases")
    void everyAcknowledgedSnapshotReadsBackAfterAPowerLossWhileArchiving(RecoveryMode mode, Point point, int chain) {
        VarveConfig config = SnapshotTest.config(dir, mode).toBuilder().walSyncMode(WalSyncMode.FSYNC).snapshotDiffChain(chain)
                .archiveSegmentSize(256L << 10).retention(RankTreePolicy.levels(Retention.keepLast(KEEP))).build();
        long seed = mode.ordinal() * 10L + point.ordinal() + 100L * chain;
        FaultyFileIOFactory io = new FaultyFileIOFactory(seed);
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        Map<String, String> unacknowledged = null;
        Varve store = Varve.open(config, io);
        io.crashAt(point.predicate());
        SplittableRandom random = new SplittableRandom(seed);
        for (int b = 0; b < 20_000 && io.crashedAt() == null; b++) {
            Map<String, String> batch = new TreeMap<>();
            for (int i = 0; i < 5; i++) batch.put(String.format("key-%04d", random.nextInt(KEYS)), "v" + b + "." + i + "x".repeat(random.nextInt(60)));
            try {
                long id = store.writeAndSnapshot(w -> batch.forEach((k, v) -> w.put("t", DiffCaptureTest.bytes(k), DiffCaptureTest.bytes(v))));
                model.putAll(batch);
                models.put(id, new TreeMap<>(model));
            } catch (RuntimeException e) {
                unacknowledged = batch; // it may or may not have reached the WAL
                break;
            }
            if (b % 200 == 199) {
                try {
                    store.checkpoint().join(); // the flush's fsyncs, then reclamation of expired segments
                } catch (RuntimeException e) {
                    break;
                }
            }
        }
        Op crashed = io.crashedAt();
        assertNotNull(crashed, "the crash point " + point + " was reached");
        store.halt();
        io.powerLoss();
        try (Varve reopened = Varve.open(config, UnforcedFileIOFactory.INSTANCE)) {
            Map<String, String> current = DiffCaptureTest.contents(reopened.table("t"));
            Map<String, String> withLast = new TreeMap<>(model);
            if (unacknowledged != null) withLast.putAll(unacknowledged);
            assertTrue(current.equals(model) || current.equals(withLast), "every acknowledged write is back, and nothing else");
            List<Long> live = new ArrayList<>();
            for (SnapshotInfo s : reopened.snapshots()) live.add(s.id());
            long lastAcknowledged = models.isEmpty() ? 0 : models.lastKey();
            for (long id : live) {
                if (id > lastAcknowledged) continue; // the unacknowledged batch's snapshot may have reached the WAL
                assertTrue(models.containsKey(id), "snapshot " + id + " was acknowledged");
                try (SnapshotView view = reopened.asOf(id)) {
                    assertEquals(models.get(id), DiffCaptureTest.contents(view.table("t")), "snapshot " + id + " after a crash at " + crashed);
                }
            }
            System.out.printf("%s, crash at %s: %d acknowledged snapshots, %d live read back, %s%n", mode, crashed, models.size(), live.size(),
                    reopened.recoveryReport());
            assertTrue(live.size() >= Math.min(KEEP / 2, models.size()), "snapshots were checked: " + live);
            List<Long> newest = new ArrayList<>(models.descendingKeySet()).subList(0, Math.min(KEEP / 2, models.size()));
            assertTrue(live.containsAll(newest), "the newest acknowledged snapshots are live: " + live);
        }
    }
}
