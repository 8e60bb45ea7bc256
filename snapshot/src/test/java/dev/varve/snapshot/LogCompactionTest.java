package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snapshot and drop logs follow the retained history, not all of it: after each checkpoint the records of
 * snapshots below the oldest live one are compacted away (a rewrite that keeps positions, which marks count), so a
 * store that declares and drops a snapshot after every batch for as long as it runs keeps both files, and its open,
 * bounded. A compaction that a crash cuts short at any step leaves an archive that recovers to the same snapshots.
 */
@Timeout(300)
class LogCompactionTest {
    private static final int KEEP = 16;
    static final int PER_CHECKPOINT = 1000;

    @TempDir
    Path dir;

    private SnapshotArchive open(FileIOFactory io, Path archiveDir, Path pages) {
        return open(io, archiveDir, pages, RankTreePolicy.levels(Retention.keepLast(KEEP)));
    }

    /** A small archive (1 MiB capture buffer, 256 KiB segments, page window 0) over page files in {@code pages}. */
    static SnapshotArchive open(FileIOFactory io, Path archiveDir, Path pages, RankTreePolicy policy) {
        SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(archiveDir, policy)
                .pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        archive.attach(new PageMemory(new PageStore(UnforcedFileIOFactory.INSTANCE, pages, 4096), 16L << 20, 1L << 20));
        return archive;
    }

    static long markOf(long id) {
        return 2 * id + 1;
    }

    private static void declare(SnapshotArchive archive, long from, long to, Runnable beforeEachEndMarker) {
        declare(archive, from, to, CompactionScenario.KEEP_LAST, beforeEachEndMarker);
    }

    /**
     * Declares snapshots from {@code from} to {@code to} (walLsn 2·id) at the ranks of {@code scenario}, a checkpoint
     * after every {@value #PER_CHECKPOINT}.
     */
    static void declare(SnapshotArchive archive, long from, long to, CompactionScenario scenario, Runnable beforeEachEndMarker) {
        for (long id = from; id <= to; id++) {
            archive.declare(id, scenario.rank(id), 1000 + id, 2 * id);
            if (id % PER_CHECKPOINT == 0) {
                archive.onMark(id, markOf(id));
                archive.beforeStartMarker(id, markOf(id));
                beforeEachEndMarker.run();
                archive.afterEndMarker(id, markOf(id));
            }
        }
    }

    static long bytesOf(Path archiveDir, String prefix) throws IOException {
        try (Stream<Path> files = Files.list(archiveDir)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix)).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).sum();
        }
    }

    private static void assertRecovered(SnapshotArchive archive, long latest) {
        assertRecovered(archive, latest, CompactionScenario.KEEP_LAST);
    }

    /**
     * The archive holds what {@code scenario} keeps after {@code latest}: those live snapshots, the next id, and every
     * other id known as dropped — the latest with its reason — and no live one.
     */
    static void assertRecovered(SnapshotArchive archive, long latest, CompactionScenario scenario) {
        List<Long> ids = new ArrayList<>();
        for (SnapshotRecord r : archive.snapshots()) ids.add(r.id());
        assertEquals(scenario.live(latest), ids, "the live snapshots");
        assertEquals(latest, archive.latest());
        assertEquals(latest + 1, archive.nextId());
        List<Long> dropped = scenario.dropped(latest);
        assertEquals(dropped, archive.latestDrops(Integer.MAX_VALUE).stream().map(DroppedSnapshot::id).toList(), "every drop, newest first");
        assertNotNull(archive.dropped(dropped.get(dropped.size() - 1)), "the oldest drop is known");
        DroppedSnapshot recent = archive.dropped(dropped.get(0));
        assertNotNull(recent, "the latest drop is known");
        assertTrue(recent.why().contains("rank 1"), recent.why());
        for (long id : ids) assertEquals(null, archive.dropped(id), "live snapshot " + id + " is not dropped");
    }

    @Test
    void theLogsHoldTheRetainedHistoryNotAllOfIt() throws IOException {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        int snapshots = 40_000;
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(0, true);
            declare(archive, 1, snapshots, () -> { });
            // retained: 16 snapshots, but each log keeps up to twice what it held after its last compaction, and at least 4,096
            long logBound = SnapshotLogDescriptor.recordOffset(2 * (SnapshotRegistry.COMPACT_MIN_RECORDS + PER_CHECKPOINT));
            assertTrue(bytesOf(archiveDir, SnapshotLogDescriptor.FILE) <= logBound, "snapshots.log holds " + bytesOf(archiveDir, SnapshotLogDescriptor.FILE)
                    + " bytes for " + snapshots + " snapshots declared, " + KEEP + " retained (bound " + logBound + ")");
            long dropBound = MaplogDescriptor.entryOffset(2 * (DropLog.COMPACT_MIN_ENTRIES + PER_CHECKPOINT));
            assertTrue(bytesOf(archiveDir, "drops.log") <= dropBound, "drops.log holds " + bytesOf(archiveDir, "drops.log") + " bytes (bound " + dropBound + ")");
            DroppedSnapshot forgotten = archive.dropped(1);
            assertNotNull(forgotten);
            assertTrue(forgotten.why().contains("no longer kept"), forgotten.why());
            assertRecovered(archive, snapshots);
        }
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(snapshots), false);
            assertRecovered(archive, snapshots);
            assertTrue(archive.dropped(1).why().contains("no longer kept"), archive.dropped(1).why());
            declare(archive, snapshots + 1, snapshots + PER_CHECKPOINT, () -> { }); // appends go on after the compacted prefix
            assertRecovered(archive, snapshots + PER_CHECKPOINT);
        }
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(snapshots + PER_CHECKPOINT), false);
            assertRecovered(archive, snapshots + PER_CHECKPOINT);
        }
    }

    /** Copies the archive directory as a kill -9 would leave it (every write made so far) at each step of a compaction. */
    static final class CrashImages extends ForwardingFileIOFactory {
        final Path archiveDir;
        final Path images;
        final List<String> taken = new ArrayList<>();
        /** The checkpoint whose end-marker work is imaged (its id: the latest snapshot its mark counts), 0 for none. */
        long armed;

        CrashImages(Path archiveDir, Path images) {
            super(UnforcedFileIOFactory.INSTANCE); // a kill -9 image: what was written, forced or not
            this.archiveDir = archiveDir;
            this.images = images;
        }

        void image(String step) {
            if (armed == 0) return;
            Path to = images.resolve(armed + "-" + taken.size() + "-" + step.replaceAll("[^A-Za-z0-9.]+", "_"));
            try {
                Files.createDirectories(to);
                try (Stream<Path> files = Files.walk(archiveDir)) {
                    for (Path p : (Iterable<Path>) files::iterator) {
                        Path target = to.resolve(archiveDir.relativize(p).toString());
                        if (Files.isDirectory(p)) Files.createDirectories(target);
                        else Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            taken.add(to.getFileName().toString());
        }

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            if (create) image("before creating " + file.getFileName());
            return super.open(file, create);
        }

        @Override
        public void atomicMove(Path from, Path to) throws IOException {
            image("before renaming " + from.getFileName());
            super.atomicMove(from, to);
            image("after renaming " + from.getFileName());
        }

        @Override
        public void delete(Path file) throws IOException {
            image("before deleting " + file.getFileName());
            super.delete(file);
            image("after deleting " + file.getFileName());
        }
    }

    /**
     * A kill -9 at each step of every compaction, each scenario's: under the kept-for-good ones the snapshot log's
     * rewrite keeps the live snapshots below its horizon as retained records, and the drop log's keeps the drop of a
     * retained one, which open would otherwise bring back.
     */
    @ParameterizedTest
    @EnumSource(CompactionScenario.class)
    void aCompactionCutShortAtAnyStepRecoversTheSameSnapshots(CompactionScenario scenario) throws IOException {
        Path archiveDir = dir.resolve("archive");
        CrashImages io = new CrashImages(archiveDir, dir.resolve("images"));
        long last = 10 * PER_CHECKPOINT; // the snapshot log compacts at 5,000 and 10,000, the drop log at 9,000
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), scenario.policy)) {
            archive.recover(0, true);
            long[] checkpoint = {0};
            declare(archive, 1, last, scenario, () -> io.armed = checkpoint[0] += PER_CHECKPOINT); // the end marker's work: after the mark is durable
            io.armed = 0;
        }
        assertTrue(io.taken.size() >= 8, "steps imaged: " + io.taken);
        assertTrue(io.taken.stream().anyMatch(s -> s.contains("renaming_snapshots.log")) && io.taken.stream().anyMatch(s -> s.contains("deleting_drops.log")),
                "both logs were compacted: " + io.taken);
        for (String image : io.taken) {
            Path copy = dir.resolve("images").resolve(image);
            long latest = Long.parseLong(image.substring(0, image.indexOf('-')));
            for (int open = 0; open < 2; open++) { // and again after the recovery cut deleted what the compaction left
                try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, copy, dir.resolve("pages-" + image), scenario.policy)) {
                    archive.recover(markOf(latest), false);
                    assertRecovered(archive, latest, scenario);
                } catch (RuntimeException | AssertionError e) {
                    throw new AssertionError("crash image " + image + " (open " + (open + 1) + "): " + e.getMessage(), e);
                }
            }
            try (Stream<Path> files = Files.list(copy)) {
                List<String> names = files.map(p -> p.getFileName().toString()).toList();
                assertEquals(1, names.stream().filter(n -> n.startsWith("drops.log")).count(), image + ": one drop log part after recovery: " + names);
                assertTrue(names.stream().noneMatch(n -> n.endsWith(".creating")), image + ": no temp file after recovery: " + names);
            }
        }
    }

    /**
     * A power cut at each file operation of a compaction (the snapshot log's at 5,000 snapshots, the drop log's at
     * 9,000, the snapshot log's again at 10,000, which lets the retained record of a since dropped snapshot go): the
     * files are then where the cut could leave them (writes not fsynced dropped, kept or torn, new directory entries
     * not fsynced lost), and the archive recovers to the same snapshots.
     */
    @ParameterizedTest
    @CsvSource({"KEEP_LAST, 5000", "KEEP_LAST, 9000", "KEPT_FOR_GOOD, 5000", "KEPT_FOR_GOOD, 9000", "KEPT_THEN_DROPPED, 9000", "KEPT_THEN_DROPPED, 10000"})
    void aPowerCutAtAnyStepOfACompactionRecoversTheSameSnapshots(CompactionScenario scenario, long checkpoint) {
        int crashes = 0;
        for (int k = 1; ; k++) {
            Path at = dir.resolve("cut-" + checkpoint + "-" + k);
            FaultyFileIOFactory io = new FaultyFileIOFactory(checkpoint * 1000 + k);
            io.strictDirectoryEntries(true);
            int nth = k;
            SnapshotArchive archive = open(io, at.resolve("archive"), at.resolve("pages"), scenario.policy);
            archive.recover(0, true);
            try {
                declare(archive, 1, checkpoint, scenario, () -> {
                    if (archive.latest() == checkpoint) io.crashAt(FaultyFileIOFactory.nth(nth, op -> true)); // the end marker's work
                });
            } catch (RuntimeException expected) {
                // the crash
            }
            if (io.crashedAt() == null) { // the compaction ran out of operations before the k-th: every one was cut at
                archive.close();
                break;
            }
            crashes++;
            FaultyFileIOFactory.Op cut = io.crashedAt();
            io.powerLoss();
            try (SnapshotArchive reopened = open(UnforcedFileIOFactory.INSTANCE, at.resolve("archive"), at.resolve("pages-after"), scenario.policy)) {
                reopened.recover(markOf(checkpoint), false);
                assertRecovered(reopened, checkpoint, scenario);
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("power cut at " + cut + ", " + io + ": " + e.getMessage(), e);
            }
        }
        assertTrue(crashes >= 8, "operations cut at: " + crashes);
    }

    /**
     * The checkpoint marks: one group per checkpoint, and after a checkpoint completed no recovery uses an older one, so
     * the file keeps a few groups however many checkpoints ran — and a compaction cut short by a kill -9 at any step
     * leaves marks that recover.
     */
    @Test
    void theMarksFileKeepsTheRecentMarks() throws IOException {
        Path archiveDir = dir.resolve("archive");
        CrashImages io = new CrashImages(archiveDir, dir.resolve("images"));
        int checkpoints = 1000;
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(0, true);
            for (long id = 1; id <= checkpoints; id++) {
                archive.declare(id, 1, 1000 + id, 2 * id);
                archive.onMark(id, markOf(id));
                archive.beforeStartMarker(id, markOf(id));
                io.armed = id;
                archive.afterEndMarker(id, markOf(id));
                io.armed = 0;
            }
        }
        long bound = MaplogDescriptor.entryOffset(ArchiveMarks.COMPACT_MIN_ENTRIES + 16);
        long bytes = bytesOf(archiveDir, ArchiveMarksDescriptor.FILE);
        assertTrue(bytes <= bound, ArchiveMarksDescriptor.FILE + " holds " + bytes + " bytes after " + checkpoints + " checkpoints (bound " + bound + ")");
        assertTrue(io.taken.stream().anyMatch(s -> s.contains("renaming_" + ArchiveMarksDescriptor.FILE.replace('-', '_'))), "the marks were compacted: " + io.taken);
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(checkpoints), false);
            assertRecovered(archive, checkpoints);
        }
        for (String image : io.taken) {
            long latest = Long.parseLong(image.substring(0, image.indexOf('-')));
            try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, dir.resolve("images").resolve(image), dir.resolve("pages-" + image))) {
                archive.recover(markOf(latest), false);
                assertRecovered(archive, latest);
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("crash image " + image + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * The marks file is created last: an archive without it whose files hold their headers alone is a creation a crash
     * cut short, and opens as new — the snapshot log's header now includes its base block.
     */
    @Test
    void anArchiveWhoseCreationStoppedBeforeItsMarksOpensAsNew() throws IOException {
        Path archiveDir = dir.resolve("archive");
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"))) {
            archive.recover(0, true);
        }
        Files.delete(archiveDir.resolve(ArchiveMarksDescriptor.FILE));
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"))) {
            archive.recover(0, true);
            declare(archive, 1, PER_CHECKPOINT, () -> { });
        }
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(PER_CHECKPOINT), false);
            assertEquals(KEEP, archive.snapshots().size());
        }
    }

    @Test
    void aDamagedBaseBlockIsNamedWithItsOffset() throws IOException {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(0, true);
            declare(archive, 1, 5 * PER_CHECKPOINT, () -> { });
        }
        Path log = archiveDir.resolve(SnapshotLogDescriptor.FILE);
        byte[] bytes = Files.readAllBytes(log);
        bytes[SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.HORIZON_OFFSET] ^= 1;
        Files.write(log, bytes);
        CorruptionException e = assertThrows(CorruptionException.class, () -> new SnapshotLog(io, log, MaplogFile.Missing.CORRUPT));
        assertEquals(log, e.file());
        assertEquals(SnapshotLogDescriptor.HEADER_SIZE, e.offset(), e.getMessage());
    }

    /** A log of format version 1 (no base block) is read as it is, and the first compaction rewrites it in the current version. */
    @Test
    void aVersionOneLogIsReadAndCompactedIntoTheCurrentVersion() throws IOException {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        long before = 3 * PER_CHECKPOINT;
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(archiveDir, RankTreePolicy.levels(Retention.keepAll()))
                .pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            archive.attach(new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20));
            archive.recover(0, true);
            declare(archive, 1, before, () -> { }); // kept all: nothing compacted
        }
        Path log = archiveDir.resolve(SnapshotLogDescriptor.FILE);
        byte[] v2 = Files.readAllBytes(log);
        ByteBuffer v1 = ByteBuffer.allocate(v2.length - SnapshotLogDescriptor.BASE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        v1.put(v2, 0, SnapshotLogDescriptor.HEADER_SIZE).put(v2, SnapshotLogDescriptor.recordsFrom(2), v2.length - SnapshotLogDescriptor.recordsFrom(2));
        v1.putInt(SnapshotLogDescriptor.VERSION_OFFSET, 1).putInt(SnapshotLogDescriptor.HEADER_CRC_OFFSET, SnapshotLogDescriptor.headerCrc(v1));
        Files.write(log, v1.array());
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(before), false); // keepLast(16) now: the policy drops all but the last 16
            declare(archive, before + 1, before + 2 * PER_CHECKPOINT, () -> { });
            assertRecovered(archive, before + 2 * PER_CHECKPOINT);
        }
        ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(log)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(SnapshotLogDescriptor.VERSION, h.getInt(SnapshotLogDescriptor.VERSION_OFFSET), "rewritten in the current version");
        assertTrue(h.getLong(SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.FIRST_OFFSET) > 0, "records compacted away");
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"))) {
            archive.recover(markOf(before + 2 * PER_CHECKPOINT), false);
            assertRecovered(archive, before + 2 * PER_CHECKPOINT);
        }
    }
}
