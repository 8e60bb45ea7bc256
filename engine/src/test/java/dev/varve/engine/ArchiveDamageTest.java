package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Damage to the snapshot archive's metadata — the snapshot, drop, join, move and mark logs, the Maplog and its Skippy
 * uplinks, ranked extents and Pagelog segments — is refused at open with a {@link CorruptionException} naming the
 * file (and the offset where there is one), before anything on disk changes; a torn tail past what the last
 * checkpoint made durable is still cut and the store recovers; and no damage makes a read return another version.
 */
@Timeout(300)
class ArchiveDamageTest {
    private static final int WINDOW = 3;
    private static final int ENTRY = 32;
    private static final int LOG_HEADER = 32;
    private static final int SNAPSHOT_HEADER = 16;
    private static final int SNAPSHOT_RECORD = 48;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return config(dir);
    }

    /** The archive's settings here: three levels, 256 KiB segments, a page window of {@value #WINDOW} (also ArchiveForeignExtentTest's). */
    static VarveConfig config(Path dir) {
        return SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().checkpointFrequency(Duration.ofHours(1))
                .archiveSegmentSize(256L << 10).snapshotPageWindow(WINDOW)
                .retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(4), Retention.keepAll())).build();
    }

    private Path archive() {
        return dir.resolve("archive");
    }

    private Map<Long, Long> build() {
        return build(dir);
    }

    /**
     * A store with checkpoints, snapshots at two levels (level 1 drops old ones), a snapshot raised after its
     * declaration and copied into a ranked extent, closed cleanly. Returns snapshot id → batches it holds.
     */
    static Map<Long, Long> build(Path dir) {
        Map<Long, Long> at = new TreeMap<>();
        try (Varve store = Varve.open(config(dir), UnforcedFileIOFactory.INSTANCE)) {
            DeterministicReplayTestSupport.workload(store, 0, 20);
            at.put(store.snapshotNow(2), 20L);
            DeterministicReplayTestSupport.workload(store, 20, 22);
            long v = store.snapshotNow(1);
            at.put(v, 22L);
            DeterministicReplayTestSupport.workload(store, 22, 40);
            store.rank(v, 2);
            store.checkpoint().join();
            long batch = 40;
            for (int i = 0; i < WINDOW + 3; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 2);
                batch += 2;
                at.put(store.snapshotNow(1), batch);
                store.checkpoint().join();
            }
            assertTrue(store.metrics().archiveBytesCopiedByRanking() > 0, "the raised snapshot was copied into a ranked extent");
            DeterministicReplayTestSupport.workload(store, batch, batch + 3);
            at.put(-1L, batch + 3);
            for (SnapshotInfo s : store.snapshots()) assertNull(check(store, s.id(), at.get(s.id())), "before any damage");
        }
        return at;
    }

    /** Null when the store reads right, currently and as of every live snapshot; else the first difference. */
    private static String readsRight(Varve store, Map<Long, Long> at) {
        String current = KillWorkload.diff(store, KillWorkload.model(at.get(-1L)));
        if (current != null) return "current: " + current;
        for (SnapshotInfo s : store.snapshots()) {
            String d = check(store, s.id(), at.get(s.id()));
            if (d != null) return "as of " + s.id() + ": " + d;
        }
        return null;
    }

    private static String check(Varve store, long id, long batches) {
        try (SnapshotView view = store.asOf(id)) {
            return KillWorkload.diff(view::table, KillWorkload.model(batches));
        }
    }

    /** Opening must fail with a corruption naming {@code file} (and {@code offset} when not negative), changing nothing on disk. */
    private CorruptionException refused(Path file, long offset) throws IOException {
        String before = hash(archive());
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(), UnforcedFileIOFactory.INSTANCE).close(), "opening a damaged archive");
        assertEquals(file, e.file(), "names the damaged file: " + e.getMessage());
        if (offset >= 0) assertEquals(offset, e.offset(), e.getMessage());
        assertEquals(before, hash(archive()), "the refused open changed nothing in the archive");
        return e;
    }

    @Test
    void flippedByteInTheMiddleOfTheSnapshotLogIsNamedWithItsOffset() throws IOException {
        build();
        Path log = archive().resolve("snapshots.log");
        long records = (Files.size(log) - SNAPSHOT_HEADER) / SNAPSHOT_RECORD;
        assertTrue(records >= 4, records + " records");
        long offset = SNAPSHOT_HEADER + records / 2 * SNAPSHOT_RECORD;
        FixtureSupport.flipByte(log, offset + 3);
        refused(log, offset);
    }

    @Test
    void truncatedOrDeletedSnapshotLogIsNamedNeverAShorterHistory() throws IOException {
        build();
        Path log = archive().resolve("snapshots.log");
        byte[] whole = Files.readAllBytes(log);
        truncate(log, whole.length - 2L * SNAPSHOT_RECORD);
        refused(log, -1);
        Files.write(log, whole);
        Files.delete(log);
        refused(log, -1);
        assertFalse(Files.exists(log), "never re-created empty");
    }

    @Test
    void damageToTheDropJoinAndMoveLogsIsNamed() throws IOException {
        build();
        for (String name : new String[]{"drops.log", "joins.log", "moves.log"}) {
            Path log = archive().resolve(name);
            byte[] whole = Files.readAllBytes(log);
            long entries = (whole.length - LOG_HEADER) / ENTRY;
            assertTrue(entries >= 1, name + " holds entries");
            long first = LOG_HEADER;
            FixtureSupport.flipByte(log, first + 9);
            refused(log, first);
            Files.write(log, whole);
            truncate(log, whole.length - ENTRY);
            refused(log, -1);
            Files.delete(log);
            refused(log, -1);
            Files.write(log, whole);
        }
        try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            assertTrue(store.snapshots().size() > 1, "the repaired files open again");
        }
    }

    @Test
    void damageToTheCheckpointMarksIsNamed() throws IOException {
        build();
        Path marks = archive().resolve("archive-marks.log");
        byte[] whole = Files.readAllBytes(marks);
        FixtureSupport.flipByte(marks, LOG_HEADER + 2 * ENTRY + 5);
        refused(marks, LOG_HEADER + 2 * ENTRY);
        Files.write(marks, whole);
        truncate(marks, whole.length - 3 * ENTRY); // the last mark's record cut short
        refused(marks, -1);
        Files.delete(marks);
        refused(marks, -1);
    }

    @Test
    void damageToTheMaplogAndItsUplinksIsNamed() throws IOException {
        build();
        Path level1 = archive().resolve("level-1");
        for (String name : new String[]{"maplog-L0.log", "skippy-uplinks-L0.log"}) {
            Path log = lastPart(level1, name);
            byte[] whole = Files.readAllBytes(log);
            long entries = (whole.length - LOG_HEADER) / ENTRY;
            assertTrue(entries >= 3, name + " holds " + entries + " entries");
            long middle = LOG_HEADER + entries / 2 * ENTRY;
            FixtureSupport.flipByte(log, middle + 4);
            refused(log, middle);
            Files.write(log, whole);
            truncate(log, whole.length - 2 * ENTRY);
            refused(log, -1);
            Files.write(log, whole);
        }
    }

    @Test
    void missingOrTruncatedRankedExtentIsNamedAtOpen() throws IOException {
        build();
        Path extent = extents().get(0);
        byte[] whole = Files.readAllBytes(extent);
        truncate(extent, whole.length - 10);
        refused(extent, -1);
        Files.delete(extent);
        refused(extent, 0);
        Files.write(extent, whole);
    }

    /**
     * One flipped byte anywhere in a ranked extent — header, record headers, ranges, payload — is found at open;
     * never does a read fall through to another version's pre-state.
     */
    @Test
    void flippedExtentByteIsNamedNeverAnotherVersion() throws IOException {
        Map<Long, Long> at = build();
        Path extent = extents().get(0);
        byte[] whole = Files.readAllBytes(extent);
        List<Long> offsets = new ArrayList<>();
        for (long o = 0; o < 200 && o < whole.length; o += 3) offsets.add(o); // header and the first records' headers and ranges
        for (int i = 1; i <= 20; i++) offsets.add((long) whole.length * i / 21);
        int named = 0;
        for (long o : offsets) {
            FixtureSupport.flipByte(extent, o);
            try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
                String wrong = readsRight(store, at);
                assertNull(wrong, "flipped byte at " + o + " of " + extent + " gave wrong data");
            } catch (StorageException e) {
                assertEquals(extent, e.file(), "flip at " + o + ": " + e.getMessage());
                named++;
            }
            Files.write(extent, whole);
        }
        System.out.printf("flipped extent bytes: %d trials, %d named errors, 0 wrong reads%n", offsets.size(), named);
        assertEquals(offsets.size(), named, "every flip is found: the whole extent is checked at open");
    }

    @Test
    void deletedPagelogSegmentIsNamed() throws IOException {
        Map<Long, Long> at = build();
        List<Path> level1 = segments(1);
        Path last = level1.get(level1.size() - 1);
        byte[] whole = Files.readAllBytes(last);
        Files.delete(last);
        refused(last, 0);
        Files.write(last, whole);
        // level 2 drops nothing: its oldest segment holds pre-states a live snapshot reads, though a missing first
        // segment looks reclaimed until then
        Path first = segments(2).get(0);
        Files.delete(first);
        try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            StorageException e = assertThrows(StorageException.class, () -> fail("read without " + first + ": " + readsRight(store, at)));
            assertEquals(first, e.file(), e.getMessage());
        } catch (CorruptionException e) {
            assertEquals(first, e.file(), "when it was the level's last segment: named at open. " + e.getMessage());
        }
    }

    private List<Path> segments(int level) throws IOException {
        try (Stream<Path> s = Files.list(archive().resolve("level-" + level))) {
            List<Path> out = s.filter(p -> p.getFileName().toString().startsWith("pagelog-")).sorted().toList();
            assertFalse(out.isEmpty(), "level " + level + " holds Pagelog segments");
            return out;
        }
    }

    /** A partial or bad record appended after what the last checkpoint made durable is a torn tail: cut, and the store reads right. */
    @Test
    void tornTailsPastTheMarkAreCutAndTheStoreRecovers() throws IOException {
        Map<Long, Long> at = build();
        Path[] logs = {archive().resolve("snapshots.log"), archive().resolve("drops.log"), archive().resolve("joins.log"), archive().resolve("moves.log"),
                archive().resolve("archive-marks.log"), lastPart(archive().resolve("level-1"), "maplog-L0.log"),
                lastPart(archive().resolve("level-1"), "skippy-uplinks-L0.log")};
        for (Path log : logs) {
            try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[]{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33}));
            }
        }
        try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            assertNull(readsRight(store, at));
        }
        try (Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE)) {
            assertNull(readsRight(store, at), "and again after the cut");
        }
    }

    private List<Path> extents() throws IOException {
        try (Stream<Path> s = Files.walk(archive())) {
            List<Path> out = s.filter(p -> p.getFileName().toString().startsWith("extent-")).sorted().toList();
            assertFalse(out.isEmpty(), "a ranked extent exists");
            return out;
        }
    }

    /** The part of log {@code name} in {@code levelDir} that holds its latest entries. */
    private static Path lastPart(Path levelDir, String name) throws IOException {
        try (Stream<Path> s = Files.list(levelDir)) {
            return s.filter(p -> p.getFileName().toString().equals(name) || p.getFileName().toString().matches(java.util.regex.Pattern.quote(name) + "\\.\\d+"))
                    .max(java.util.Comparator.comparingLong(p -> p.getFileName().toString().equals(name) ? 0 : Long.parseLong(p.getFileName().toString().substring(name.length() + 1))))
                    .orElseThrow();
        }
    }

    private static void truncate(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    /** A digest of every file's name and bytes under {@code root}. */
    private static String hash(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Path p : s.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().equals("LOCK")).sorted().toList()) {
                md.update(root.relativize(p).toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                md.update(Files.readAllBytes(p));
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
