package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Review of 9b5d925: many segments past a checkpoint mark set aside by a power loss, and a second power loss at each
 * of the deletes that removes them; damage to segments a mark needs (refused naming the file, by open, the read-only
 * open and verify alike, none changing a file) and to segments past it (accepted); the descriptors the unforced
 * filled segments hold between checkpoints.
 */
@Timeout(900)
class PagelogSetAsideReviewTest {
    private static final int KEYS = 300;

    @TempDir
    Path dir;

    VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder().walSyncMode(WalSyncMode.FSYNC).snapshotDiffChain(3).archiveSegmentSize(256L << 10)
                .checkpointFrequency(Duration.ofDays(1)).retention(RankTreePolicy.levels(Retention.keepAll())).build();
    }

    /** Writes batches with a snapshot after each until the level's Pagelog has {@code segments} segments. */
    private int writeUntil(Varve store, int segments, int from, TreeMap<Long, Map<String, String>> models, Map<String, String> model) throws IOException {
        SplittableRandom random = new SplittableRandom(from);
        int b = from;
        while (pagelogs().size() < segments) {
            Map<String, String> batch = new TreeMap<>();
            for (int i = 0; i < 5; i++) batch.put(String.format("key-%04d", random.nextInt(KEYS)), "v" + b + "." + i + "x".repeat(random.nextInt(60)));
            long id = store.writeAndSnapshot(w -> batch.forEach((key, v) -> w.put("t", DiffCaptureTest.bytes(key), DiffCaptureTest.bytes(v))));
            model.putAll(batch);
            models.put(id, new TreeMap<>(model));
            b++;
        }
        return b;
    }

    private List<Path> pagelogs() throws IOException {
        Path level = dir.resolve("archive").resolve("level-1");
        if (!Files.isDirectory(level)) return List.of();
        try (Stream<Path> s = Files.list(level)) {
            return s.filter(p -> p.getFileName().toString().startsWith("pagelog-") && p.getFileName().toString().endsWith(".log")).sorted().toList();
        }
    }

    private static void check(Varve store, Map<String, String> model, TreeMap<Long, Map<String, String>> models, String where) {
        assertEquals(model, DiffCaptureTest.contents(store.table("t")), "every acknowledged write; " + where);
        List<Long> live = new ArrayList<>();
        for (SnapshotInfo s : store.snapshots()) live.add(s.id());
        for (long id : models.keySet()) {
            assertTrue(live.contains(id), "acknowledged snapshot " + id + " is live; " + where);
            try (SnapshotView view = store.asOf(id)) {
                assertEquals(models.get(id), DiffCaptureTest.contents(view.table("t")), "snapshot " + id + "; " + where);
            }
        }
    }

    static Stream<Arguments> deleteCrashes() {
        return Stream.of(Arguments.of(RecoveryMode.CHECKPOINT_RECOVERY_FILE, 1));
    }

    /** The other mode, and the later deletes of the recovery: with -Plong. */
    static Stream<Arguments> laterDeleteCrashes() {
        List<Arguments> out = new ArrayList<>();
        for (RecoveryMode mode : RecoveryMode.values())
            for (int n = 1; n <= 4; n++) if (mode != RecoveryMode.CHECKPOINT_RECOVERY_FILE || n > 1) out.add(Arguments.of(mode, n));
        return out.stream();
    }

    /**
     * A checkpoint at segment 2, then segments up to 9 without one: the power loss leaves one of 2..8 short (they were
     * never forced) and sets aside what follows it; the recovery dies at its n-th delete of a Pagelog segment, power
     * is lost again, and the next open must still bring everything back.
     */
    @ParameterizedTest(name = "{0}, second power loss at the Pagelog delete #{1} of the recovery")
    @MethodSource("deleteCrashes")
    void aPowerLossWhileRecoveryDeletesTheSetAsideSegments(RecoveryMode mode, int n) throws IOException {
        deleteCrash(mode, n);
    }

    @Tag("long")
    @ParameterizedTest(name = "{0}, second power loss at the Pagelog delete #{1} of the recovery")
    @MethodSource("laterDeleteCrashes")
    void aPowerLossAtAnotherDeleteOfTheRecovery(RecoveryMode mode, int n) throws IOException {
        deleteCrash(mode, n);
    }

    private void deleteCrash(RecoveryMode mode, int n) throws IOException {
        VarveConfig config = config(mode);
        FaultyFileIOFactory io = new FaultyFileIOFactory(100 + n + 10L * mode.ordinal());
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        Varve store = Varve.open(config, io);
        int b = writeUntil(store, 3, 0, models, model);
        store.checkpoint().join();
        writeUntil(store, 10, b, models, model);
        store.halt();
        io.powerLoss();
        StringBuilder layout = new StringBuilder();
        for (Path p : pagelogs()) layout.append(p.getFileName()).append('=').append(Files.size(p)).append(' ');
        FaultyFileIOFactory again = new FaultyFileIOFactory(200 + n);
        again.crashAt(FaultyFileIOFactory.nth(n, op -> op.kind() == Kind.DELETE && op.names("pagelog-")));
        String failure = "none";
        try {
            Varve.open(config, again).halt();
        } catch (RuntimeException e) {
            failure = e.toString(); // died in recovery
        }
        again.powerLoss();
        String where = "after the power loss: " + layout + "; second crash at " + again.crashedAt() + " (" + failure + "); now " + pagelogs().size() + " segments";
        try (Varve reopened = Varve.open(config)) {
            check(reopened, model, models, where);
        }
        try (Varve reopened = Varve.open(config)) {
            check(reopened, model, models, where + " (again)");
        }
        System.out.println(mode + " #" + n + ": " + where);
    }


    private static void cut(Path p, long bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.truncate(Math.max(0, ch.size() - bytes));
        }
    }

    /** Open, the read-only open and verify all refuse, naming {@code damaged}, and none changes a file. */
    private void refusedNaming(VarveConfig config, Path damaged, String what) throws IOException {
        Map<Path, byte[]> before = FixtureSupport.filesUnder(dir);
        CorruptionException ro = assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config).close(), what + " [read-only]");
        assertEquals(damaged, ro.file(), what + " [read-only]: " + ro.getMessage());
        StoreVerifier.Report r = StoreVerifier.verify(config);
        assertTrue(r.damage().stream().anyMatch(d -> d.file().equals(damaged)), what + " [verify]: " + r.damage() + " " + r.unusable());
        CorruptionException rw = assertThrows(CorruptionException.class, () -> Varve.open(config).close(), what + " [open]");
        assertEquals(damaged, rw.file(), what + " [open]: " + rw.getMessage());
        FixtureSupport.assertSameFiles(before, FixtureSupport.filesUnder(dir)); // no file changed
    }

    static Stream<Arguments> damages() {
        return Stream.of("TRUNCATE_MIDDLE_BY_ONE_RECORD", "TRUNCATE_LAST", "DELETE_LAST_TWO").map(Arguments::of);
    }

    /** The other damages: with -Plong. */
    static Stream<Arguments> moreDamages() {
        return Stream.of("TRUNCATE_MIDDLE_BY_100_BYTES", "TRUNCATE_MIDDLE_TO_HEADER", "DELETE_LAST", "TRUNCATE_FIRST").map(Arguments::of);
    }

    /** After a clean close (its checkpoint made every segment durable), damage to any segment is refused naming it. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("damages")
    void damageToASegmentTheMarkNeedsIsRefusedNamingIt(String damage) throws IOException {
        damage(damage);
    }

    @Tag("long")
    @ParameterizedTest(name = "{0}")
    @MethodSource("moreDamages")
    void moreDamageToASegmentTheMarkNeedsIsRefusedNamingIt(String damage) throws IOException {
        damage(damage);
    }

    private void damage(String damage) throws IOException {
        VarveConfig config = config(RecoveryMode.WAL_PHYSICAL);
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        try (Varve store = Varve.open(config)) {
            writeUntil(store, 6, 0, models, model);
        }
        List<Path> segs = pagelogs();
        assertTrue(segs.size() >= 6, segs.toString());
        int rb = 4096 + 32;
        Path named = switch (damage) {
            case "TRUNCATE_MIDDLE_BY_ONE_RECORD" -> { cut(segs.get(2), rb); yield segs.get(2); }
            case "TRUNCATE_MIDDLE_BY_100_BYTES" -> { cut(segs.get(2), 100); yield segs.get(2); }
            case "TRUNCATE_MIDDLE_TO_HEADER" -> { cut(segs.get(2), Files.size(segs.get(2)) - 32); yield segs.get(2); }
            case "TRUNCATE_FIRST" -> { cut(segs.get(0), rb); yield segs.get(0); }
            case "TRUNCATE_LAST" -> { Path last = segs.get(segs.size() - 1); cut(last, Math.min(rb, Files.size(last) - 32)); yield last; }
            case "DELETE_LAST" -> { Files.delete(segs.get(segs.size() - 1)); yield segs.get(segs.size() - 1); }
            case "DELETE_LAST_TWO" -> { Files.delete(segs.get(segs.size() - 1)); Files.delete(segs.get(segs.size() - 2)); yield segs.get(segs.size() - 1); } // whereShort: the last one needed
            default -> throw new IllegalArgumentException(damage);
        };
        refusedNaming(config, named, damage + " of " + segs);
    }

    /**
     * A checkpoint at segment 3, then segments to 7 and a crash (no power loss: the files are whole). Damage to a
     * segment past the mark is no damage (recovery cuts it); damage to one before it is refused naming it.
     */
    @Test
    void damageBeforeAndAfterTheLastCheckpoint() throws IOException {
        VarveConfig config = config(RecoveryMode.CHECKPOINT_RECOVERY_FILE);
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        Varve store = Varve.open(config);
        int b = writeUntil(store, 4, 0, models, model);
        store.checkpoint().join();
        writeUntil(store, 8, b, models, model);
        store.halt();
        List<Path> segs = pagelogs();
        // past the mark: segment 5 of 8 cut short, as a power loss would have
        cut(segs.get(5), 3 * (4096 + 32) + 7);
        try (Varve ro = Varve.openReadOnly(config)) {
            check(ro, model, models, "read-only, segment 5 cut (past the mark): " + segs);
        }
        // verify agrees: no damage, and segment 5's partial record and the segments after it are what open cuts
        StoreVerifier.Report verified = StoreVerifier.verify(config);
        assertTrue(verified.unusable() == null && verified.damage().isEmpty(), "verify, segment 5 cut (past the mark): " + verified);
        List<Path> cutFiles = verified.files().archiveCut().stream().map(StoreInspector.Cut::file).toList();
        assertTrue(cutFiles.containsAll(segs.subList(5, segs.size())), "cut " + verified.files().archiveCut() + " of " + segs);
        try (Varve reopened = Varve.open(config)) {
            check(reopened, model, models, "segment 5 cut (past the mark): " + segs);
        }
        // now everything is behind the close's checkpoint: cut segment 1
        segs = pagelogs();
        cut(segs.get(1), 4096 + 32);
        refusedNaming(config, segs.get(1), "segment 1 cut after a clean close: " + segs);
    }

    /**
     * The filled segments are not forced until the next checkpoint, and a segment written since its last force keeps
     * its descriptor (PartFile: the fsync must go through it), so without a checkpoint every filled segment holds one:
     * the DescriptorBudget of 16 no longer bounds them.
     */
    @Test
    void filledSegmentsDoNotEachHoldADescriptorUntilTheNextCheckpoint() throws IOException {
        VarveConfig config = config(RecoveryMode.WAL_PHYSICAL);
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Map<String, String> model = new TreeMap<>();
        try (Varve store = Varve.open(config)) {
            writeUntil(store, 3, 0, models, model);
            store.checkpoint().join();
            writeUntil(store, 120, 100_000, models, model);
            long open = 0;
            String archive = dir.toRealPath().resolve("archive").toString(); // this store's: other classes' run beside it
            try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
                for (Path fd : (Iterable<Path>) fds::iterator) {
                    try {
                        String file = Files.readSymbolicLink(fd).toString();
                        if (file.startsWith(archive) && file.contains("pagelog-")) open++;
                    } catch (IOException e) {
                        // closed meanwhile
                    }
                }
            }
            System.out.println("Pagelog descriptors open with 120 segments since the last checkpoint: " + open);
            assertTrue(open <= 48, "Pagelog descriptors open: " + open + " (budget 16; the build before 9b5d925 held 33 with 80 segments)");
        }
    }
}
