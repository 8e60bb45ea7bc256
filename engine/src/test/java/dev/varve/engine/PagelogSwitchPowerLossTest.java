package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.FaultyFileIOFactory.Op;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Review of 9b5d925 (a filled Pagelog segment is forced by the next checkpoint's flush, not at the segment switch):
 * power loss at every file operation in a window after a segment switch and after the first force of a filled
 * segment, in both recovery modes and both walSyncModes; then the read-only open (which must change no file), then
 * verify (which must find no damage: what recovery cuts is listed apart), then open, and, where the power loss left segments set aside, a second power loss during the recovery that
 * deletes them, then open again. Every acknowledged write (FSYNC) or a prefix of them (LOG_ONLY), and every live
 * acknowledged snapshot, must read back exactly. The default suite runs two of these trials; -Plong runs them all
 * (88, about 12 minutes here).
 */
@Timeout(1800)
class PagelogSwitchPowerLossTest {
    private static final int KEYS = 300;

    @TempDir
    Path dir;

    enum Event {
        /** The rename that creates segment 4: segment 3 was filled and not forced. */
        SEGMENT_CREATED(op -> op.kind() == Kind.MOVE && op.names("pagelog-00000004.log")),
        /** The first fsync of segment 3 (a checkpoint's forceFilled when the archiver has moved on). */
        FILLED_FORCED(op -> op.kind() == Kind.FORCE && op.names("pagelog-00000003.log"));

        final Predicate<Op> trigger;

        Event(Predicate<Op> trigger) {
            this.trigger = trigger;
        }
    }

    /** The {@code k}-th operation (0: the trigger itself) from the first one {@code trigger} matches. */
    static Predicate<Op> after(Predicate<Op> trigger, int k) {
        int[] seen = {-1};
        return op -> {
            if (seen[0] < 0 && trigger.test(op)) seen[0] = 0;
            else if (seen[0] >= 0) seen[0]++;
            return seen[0] == k;
        };
    }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (RecoveryMode mode : RecoveryMode.values())
            for (WalSyncMode sync : new WalSyncMode[]{WalSyncMode.FSYNC, WalSyncMode.LOG_ONLY})
                for (Event e : Event.values())
                    for (int k : new int[]{0, 1, 2, 3, 4, 6, 9, 14, 20})
                        out.add(Arguments.of(mode, sync, e, k));
        return out.stream();
    }

    VarveConfig config(RecoveryMode mode, WalSyncMode sync, int levels) {
        Retention[] keep = new Retention[levels];
        java.util.Arrays.fill(keep, Retention.keepAll());
        return SnapshotTest.config(dir, mode).toBuilder().walSyncMode(sync).snapshotDiffChain(3).archiveSegmentSize(256L << 10)
                .checkpointFrequency(Duration.ofDays(1)).retention(RankTreePolicy.levels(keep)).build();
    }

    static Stream<Arguments> rankedCases() {
        List<Arguments> out = new ArrayList<>();
        for (RecoveryMode mode : RecoveryMode.values())
            for (Event e : Event.values())
                for (int k : new int[]{0, 2, 5, 11})
                    out.add(Arguments.of(mode, WalSyncMode.FSYNC, e, k));
        return out.stream();
    }

    /** What the default suite runs: each event, in one recovery mode each, under FSYNC, two operations after it. */
    static Stream<Arguments> defaultCases() {
        return Stream.of(Arguments.of(RecoveryMode.WAL_PHYSICAL, WalSyncMode.FSYNC, Event.SEGMENT_CREATED, 2),
                Arguments.of(RecoveryMode.CHECKPOINT_RECOVERY_FILE, WalSyncMode.FSYNC, Event.FILLED_FORCED, 2));
    }

    @ParameterizedTest(name = "{0} {1}, crash {3} ops after {2}")
    @MethodSource("defaultCases")
    void aPowerLossAroundASegmentSwitch(RecoveryMode mode, WalSyncMode sync, Event event, int k) throws IOException {
        run(mode, sync, event, k, 1);
    }

    /** The same with three rank levels, each snapshot of rank 1 + batch % 3 (lazy ranking copies, three volumes). */
    @Tag("long")
    @ParameterizedTest(name = "ranked: {0} {1}, crash {3} ops after {2}")
    @MethodSource("rankedCases")
    void rankedSnapshotsSurviveAPowerLossAroundASegmentSwitch(RecoveryMode mode, WalSyncMode sync, Event event, int k) throws IOException {
        run(mode, sync, event, k, 3);
    }

    @Tag("long")
    @ParameterizedTest(name = "{0} {1}, crash {3} ops after {2}")
    @MethodSource("cases")
    void acknowledgedWritesAndSnapshotsSurviveAPowerLossAroundASegmentSwitch(RecoveryMode mode, WalSyncMode sync, Event event, int k) throws IOException {
        run(mode, sync, event, k, 1);
    }

    private void run(RecoveryMode mode, WalSyncMode sync, Event event, int k, int levels) throws IOException {
        VarveConfig config = config(mode, sync, levels);
        long seed = levels * 10_000L + mode.ordinal() * 1000L + sync.ordinal() * 100L + event.ordinal() * 30L + k;
        FaultyFileIOFactory io = new FaultyFileIOFactory(seed);
        List<Map<String, String>> states = new ArrayList<>(); // states.get(b): the table after batch b-1 (0: empty)
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        states.add(new TreeMap<>());
        Map<String, String> unacknowledged = null;
        Varve store = Varve.open(config, io);
        io.crashAt(after(event.trigger, k));
        SplittableRandom random = new SplittableRandom(seed);
        for (int b = 0; b < 5_000 && io.crashedAt() == null; b++) {
            Map<String, String> batch = new TreeMap<>();
            for (int i = 0; i < 5; i++) batch.put(String.format("key-%04d", random.nextInt(KEYS)), "v" + b + "." + i + "x".repeat(random.nextInt(60)));
            try {
                long id = store.writeAndSnapshot(w -> batch.forEach((key, v) -> w.put("t", DiffCaptureTest.bytes(key), DiffCaptureTest.bytes(v))), 1 + b % levels);
                model.putAll(batch);
                models.put(id, new TreeMap<>(model));
                states.add(new TreeMap<>(model));
            } catch (RuntimeException e) {
                unacknowledged = batch;
                break;
            }
            if (b % 45 == 44) {
                try {
                    store.checkpoint().join();
                } catch (RuntimeException e) {
                    break;
                }
            }
        }
        Op crashed = io.crashedAt();
        assertNotNull(crashed, "the crash point was reached");
        store.halt();
        io.powerLoss();
        String layout = pagelogLayout();
        String where = "crash at " + crashed + " (" + io + "); after the power loss: " + layout;

        // read-only open: reads as open will, changes no file
        Map<Path, byte[]> before = FixtureSupport.filesUnder(dir);
        if (sync == WalSyncMode.LOG_ONLY) {
            try {
                Varve.openReadOnly(config).close();
            } catch (dev.varve.core.io.CorruptionException e) {
                org.junit.jupiter.api.Assumptions.assumeFalse(e.file() != null && e.file().toString().contains("/wal/"),
                        "LOG_ONLY does not survive a power loss: the WAL was torn (" + e.getMessage() + ")");
                throw e;
            }
        }
        try (Varve ro = Varve.openReadOnly(config)) {
            check(ro, sync, states, models, unacknowledged, where + " [read-only]");
        }
        FixtureSupport.assertSameFiles(before, FixtureSupport.filesUnder(dir)); // the read-only open changed no file
        StoreVerifier.Report report = StoreVerifier.verify(config);
        FixtureSupport.assertSameFiles(before, FixtureSupport.filesUnder(dir)); // nor did verify
        // verify judges as open does: what recovery cuts past the mark (set-aside segments included) is no damage
        assertNull(report.unusable(), where + " [verify]");
        assertTrue(report.damage().isEmpty(), where + " [verify] " + report.damage());

        // a second power loss during the recovery, at the first delete of a Pagelog segment (the set-aside ones)
        FaultyFileIOFactory again = new FaultyFileIOFactory(seed + 7);
        again.crashAt(FaultyFileIOFactory.nth(1, op -> op.kind() == Kind.DELETE && op.names("pagelog-")));
        try {
            Varve.open(config, again).halt();
        } catch (RuntimeException e) {
            // the process died while recovering
        }
        again.powerLoss();
        try (Varve reopened = Varve.open(config)) {
            check(reopened, sync, states, models, unacknowledged, where + " [open after a crash in recovery at " + again.crashedAt() + "]");
        }
        try (Varve reopened = Varve.open(config)) {
            check(reopened, sync, states, models, unacknowledged, where + " [second open]");
        }
        System.out.printf("%s %s %s+%d: crash at %s; %s; verify cut: %s%n", mode, sync, event, k, crashed, layout,
                report.files().archiveCut());
    }

    private static void check(Varve store, WalSyncMode sync, List<Map<String, String>> states, TreeMap<Long, Map<String, String>> models,
                              Map<String, String> unacknowledged, String where) {
        Map<String, String> current = store.tables().contains("t") ? DiffCaptureTest.contents(store.table("t")) : Map.of();
        Map<String, String> last = states.get(states.size() - 1);
        Map<String, String> withLast = new TreeMap<>(last);
        if (unacknowledged != null) withLast.putAll(unacknowledged);
        if (sync == WalSyncMode.FSYNC) assertTrue(current.equals(last) || current.equals(withLast), "every acknowledged write is back; " + where);
        else assertTrue(states.contains(current) || current.equals(withLast), "a prefix of the writes is back; " + where);
        long lastAcknowledged = models.isEmpty() ? 0 : models.lastKey();
        List<Long> live = new ArrayList<>();
        for (SnapshotInfo s : store.snapshots()) live.add(s.id());
        for (long id : live) {
            if (id > lastAcknowledged) continue;
            assertTrue(models.containsKey(id), "snapshot " + id + " was acknowledged; " + where);
            try (SnapshotView view = store.asOf(id)) {
                assertEquals(models.get(id), DiffCaptureTest.contents(view.table("t")), "snapshot " + id + "; " + where);
            }
        }
        if (sync == WalSyncMode.FSYNC)
            for (long id : models.keySet()) assertTrue(live.contains(id), "acknowledged snapshot " + id + " is live; " + where);
    }

    private String pagelogLayout() throws IOException {
        StringBuilder b = new StringBuilder();
        Path level = dir.resolve("archive").resolve("level-1");
        if (!Files.isDirectory(level)) return "no level-1";
        try (Stream<Path> s = Files.list(level)) {
            s.filter(p -> p.getFileName().toString().startsWith("pagelog-")).sorted().forEach(p -> {
                try {
                    b.append(p.getFileName()).append('=').append(Files.size(p)).append(' ');
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
        return b.toString();
    }

}
