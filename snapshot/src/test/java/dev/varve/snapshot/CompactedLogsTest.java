package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Compacted snapshot and drop logs beside everything else the registry does (from a black-box review of the
 * compaction): rank changes of old snapshots across compactions and reopen, damage in a compacted drop log or snapshot
 * log named with its file and offset, lookups of old drops racing compactions, the lookup and the listing agreeing on
 * what the drop log still details, a leftover of the drop-log rewrite of earlier builds, and a format-1 log with
 * records but no marks refused as before.
 */
@Timeout(300)
class CompactedLogsTest {
    @TempDir
    Path dir;

    private SnapshotArchive open(FileIOFactory io, Path archiveDir, Path pages, RankTreePolicy policy) {
        SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(archiveDir, policy)
                .pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        archive.attach(new PageMemory(new PageStore(UnforcedFileIOFactory.INSTANCE, pages, 4096), 16L << 20, 1L << 20));
        return archive;
    }

    static RankTreePolicy twoLevels() {
        return RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3));
    }

    static long mark(long id) {
        return 4 * id + 3;
    }

    /** Declares from..to (walLsn 4 id), raising id-1 to rank 2 after every 7th; checkpoint every 1000. */
    static void run(SnapshotArchive a, long from, long to) {
        for (long id = from; id <= to; id++) {
            a.declare(id, 1, 1000 + id, 4 * id);
            if (id % 7 == 0) assertTrue(a.rank(id - 1, 2, 4 * id + 1), "rank " + (id - 1));
            if (id % 1000 == 0) {
                a.onMark(id, mark(id));
                a.beforeStartMarker(id, mark(id));
                a.afterEndMarker(id, mark(id));
            }
        }
    }

    static List<String> state(SnapshotArchive a) {
        List<String> out = new ArrayList<>();
        for (SnapshotRecord r : a.snapshots()) out.add(r.id() + "@" + r.rank());
        return out;
    }

    @Test
    void rankChangesAcrossCompactionAndReopen() {
        Path ad = dir.resolve("archive");
        List<String> before;
        long last = 20_000;
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), twoLevels())) {
            a.recover(0, true);
            run(a, 1, last);
            assertTrue(a.dropHorizon() > 1, "compacted: " + a.dropHorizon());
            before = state(a);
            for (long id = 1; id <= last; id++) if (a.find(id) == null) assertNotNull(a.dropped(id), "dropped " + id);
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), twoLevels())) {
            a.recover(mark(last), false);
            assertEquals(before, state(a));
            for (long id = 1; id <= last; id++) if (a.find(id) == null) assertNotNull(a.dropped(id), "dropped " + id);
            run(a, last + 1, last + 3000);
            before = state(a);
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), twoLevels())) {
            a.recover(mark(last + 3000), false);
            assertEquals(before, state(a));
        }
    }

    private Path compacted(Path ad, long last) throws IOException {
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
            a.recover(0, true);
            for (long id = 1; id <= last; id++) {
                a.declare(id, 1, 1000 + id, 4 * id);
                if (id % 1000 == 0) {
                    a.onMark(id, mark(id));
                    a.beforeStartMarker(id, mark(id));
                    a.afterEndMarker(id, mark(id));
                }
            }
        }
        try (Stream<Path> s = Files.list(ad)) {
            return s.filter(p -> p.getFileName().toString().startsWith("drops.log.")).findFirst().orElseThrow(() -> new AssertionError("no drops.log.N"));
        }
    }

    @Test
    void damageInACompactedDropLogIsNamed() throws IOException {
        Path ad = dir.resolve("archive");
        long last = 10_000;
        Path part = compacted(ad, last);
        byte[] b = Files.readAllBytes(part);
        long off = MaplogDescriptor.entryOffset(10) + 3;
        b[(int) off] ^= 0x10;
        Files.write(part, b);
        CorruptionException e = assertThrows(CorruptionException.class, () -> {
            try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
                a.recover(mark(last), false);
            }
        });
        assertEquals(part, e.file(), e.getMessage());
        assertEquals(MaplogDescriptor.entryOffset(10), e.offset(), e.getMessage());
    }

    @Test
    void damageInACompactedSnapshotLogRecordIsNamed() throws IOException {
        Path ad = dir.resolve("archive");
        long last = 10_000;
        compacted(ad, last);
        Path log = ad.resolve(SnapshotLogDescriptor.FILE);
        byte[] b = Files.readAllBytes(log);
        long off = SnapshotLogDescriptor.recordsFrom(2) + 5L * SnapshotLogDescriptor.RECORD_SIZE + 2;
        b[(int) off] ^= 0x10;
        Files.write(log, b);
        CorruptionException e = assertThrows(CorruptionException.class, () -> {
            try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
                a.recover(mark(last), false);
            }
        });
        assertEquals(log, e.file(), e.getMessage());
        assertEquals(SnapshotLogDescriptor.recordsFrom(2) + 5L * SnapshotLogDescriptor.RECORD_SIZE, e.offset(), e.getMessage());
        // and verify names it too
        List<String> found = new ArrayList<>();
        ArchiveFileCheck.check(UnforcedFileIOFactory.INSTANCE, ad, 4096, (p, o, what) -> found.add(p.getFileName() + "@" + o + ": " + what));
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).startsWith(SnapshotLogDescriptor.FILE + "@" + (SnapshotLogDescriptor.recordsFrom(2) + 5L * SnapshotLogDescriptor.RECORD_SIZE)), found.toString());
    }

    @Test
    void droppedLookupsRacingCompactions() throws Exception {
        Path ad = dir.resolve("race");
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        long[] lookups = {0, 0};
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
            a.recover(0, true);
            Thread reader = new Thread(() -> {
                java.util.Random rnd = new java.util.Random(1);
                try {
                    while (!done.get()) {
                        long latest = a.latest();
                        if (latest < 40) continue;
                        long id = 1 + (long) (rnd.nextDouble() * (latest - 30));
                        DroppedSnapshot d = a.dropped(id);
                        if (d == null) throw new AssertionError("snapshot " + id + " of " + latest + " not known as dropped; horizon " + a.dropHorizon());
                        lookups[0]++;
                        if (rnd.nextInt(200) == 0) {
                            List<DroppedSnapshot> all = a.detailedDrops();
                            for (int i = 1; i < all.size(); i++) if (all.get(i).id() <= all.get(i - 1).id()) throw new AssertionError("order " + all.get(i));
                            lookups[1]++;
                        }
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            reader.start();
            for (long id = 1; id <= 40_000 && failure.get() == null; id++) {
                a.declare(id, 1, 1000 + id, 4 * id);
                if (id % 1000 == 0) {
                    a.onMark(id, mark(id));
                    a.beforeStartMarker(id, mark(id));
                    a.afterEndMarker(id, mark(id));
                }
            }
            done.set(true);
            reader.join();
        }
        if (failure.get() != null) throw new AssertionError(failure.get());
        assertTrue(lookups[0] > 0 && lookups[1] > 0, "the reader ran: " + lookups[0] + " lookups, " + lookups[1] + " listings");
    }

    /** An old (format 1) archive whose marks file was lost, holding one snapshot record: refused before this feature, as any archive with records and no marks. */
    @Test
    void aVersionOneLogWithOneRecordAndNoMarksIsRefused() throws IOException {
        Path ad = dir.resolve("v1nomarks");
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        try (SnapshotArchive a = open(io, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepAll()))) {
            a.recover(0, true);
            a.declare(1, 1, 1001, 4);
            a.onMark(1, mark(1));
            a.beforeStartMarker(1, mark(1));
            a.afterEndMarker(1, mark(1));
        }
        Path log = ad.resolve(SnapshotLogDescriptor.FILE);
        byte[] v2 = Files.readAllBytes(log);
        assertEquals(SnapshotLogDescriptor.recordsFrom(2) + SnapshotLogDescriptor.RECORD_SIZE, v2.length);
        java.nio.ByteBuffer v1 = java.nio.ByteBuffer.allocate(v2.length - SnapshotLogDescriptor.BASE_SIZE).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        v1.put(v2, 0, SnapshotLogDescriptor.HEADER_SIZE).put(v2, SnapshotLogDescriptor.recordsFrom(2), v2.length - SnapshotLogDescriptor.recordsFrom(2));
        v1.putInt(SnapshotLogDescriptor.VERSION_OFFSET, 1).putInt(SnapshotLogDescriptor.HEADER_CRC_OFFSET, SnapshotLogDescriptor.headerCrc(v1));
        Files.write(log, v1.array());
        // control: with its marks the v1 archive opens and holds snapshot 1
        Path copy = dir.resolve("v1marks");
        Files.createDirectories(copy);
        try (Stream<Path> fs = Files.walk(ad)) {
            for (Path p : fs.toList()) {
                Path t = copy.resolve(ad.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(t); else Files.copy(p, t);
            }
        }
        try (SnapshotArchive a = open(io, copy, dir.resolve("p2"), RankTreePolicy.levels(Retention.keepAll()))) {
            a.recover(mark(1), false);
            assertNotNull(a.find(1));
        }
        try (Stream<Path> fs = Files.list(ad)) {
            for (Path p : fs.filter(p -> p.getFileName().toString().startsWith("archive-marks")).toList()) Files.delete(p);
        }
        CorruptionException refused = assertThrows(CorruptionException.class, () -> {
            try (SnapshotArchive a = open(io, ad, dir.resolve("p3"), RankTreePolicy.levels(Retention.keepAll()))) {
                a.recover(mark(1), false); // as the engine would, for its checkpoint
            }
        }, "a v1 snapshots.log holding a record while the marks are missing");
        assertTrue(refused.getMessage().contains("marks are missing"), refused.getMessage());
    }

    /** What the drop log still details, dropped(id) should tell the same way (the listing and the lookup must agree). */
    @Test
    void detailedDropsAndDroppedAgree() {
        Path ad = dir.resolve("agree");
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
            a.recover(0, true);
            for (long id = 1; id <= 20_000; id++) {
                a.declare(id, 1, 1000 + id, 4 * id);
                if (id % 1000 == 0) {
                    a.onMark(id, mark(id));
                    a.beforeStartMarker(id, mark(id));
                    a.afterEndMarker(id, mark(id));
                }
            }
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
            a.recover(mark(20_000), false);
            List<DroppedSnapshot> listed = a.detailedDrops();
            int disagree = 0;
            String first = null;
            for (DroppedSnapshot d : listed) {
                DroppedSnapshot one = a.dropped(d.id());
                if (!one.why().equals(d.why())) {
                    disagree++;
                    if (first == null) first = "snapshot " + d.id() + " (horizon " + a.dropHorizon() + "): listed as '" + d.why() + "', dropped() says '" + one.why() + "'";
                }
            }
            assertEquals(0, disagree, first);
        }
    }

    /** The drop log rewrite of the builds before this change wrote drops.log.rewrite, which their next open deleted: a store upgraded after such a crash. */
    @Test
    void anOldBuildsDropLogRewriteLeftoverGoesAtOpen() throws IOException {
        Path ad = dir.resolve("oldrewrite");
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        try (SnapshotArchive a = open(io, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(4)))) {
            a.recover(0, true);
            for (long id = 1; id <= 10; id++) a.declare(id, 1, 1000 + id, 4 * id);
            a.onMark(10, mark(10));
            a.beforeStartMarker(10, mark(10));
            a.afterEndMarker(10, mark(10));
        }
        byte[] drops = Files.readAllBytes(ad.resolve("drops.log"));
        Path leftover = ad.resolve("drops.log.rewrite");
        Files.write(leftover, java.util.Arrays.copyOf(drops, drops.length - 7)); // torn: the old rewrite was cut before its fsync
        List<String> before = new ArrayList<>();
        ArchiveFileCheck.check(io, ad, 4096, (p, o, what) -> before.add(p.getFileName() + "@" + o + ": " + what));
        try (SnapshotArchive a = open(io, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(4)))) {
            a.recover(mark(10), false);
            assertEquals(4, a.snapshots().size());
        }
        List<String> after = new ArrayList<>();
        ArchiveFileCheck.check(io, ad, 4096, (p, o, what) -> after.add(p.getFileName() + "@" + o + ": " + what));
        assertTrue(after.isEmpty(), "verify after a successful open: " + after);
        assertTrue(!Files.exists(leftover), "the old build's half-written rewrite is still there");
    }

    /** Damage in a compacted drop log part after the mark's count, before valid drops (a reclamation may have relied on them): named, not cut. */
    @Test
    void damageAfterTheMarkInACompactedDropLogIsNamed() throws IOException {
        Path ad = dir.resolve("archive");
        long last = 10_000;
        compacted(ad, last);
        Path part;
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
            a.recover(mark(last), false);
            for (long id = last + 1; id <= last + 50; id++) a.declare(id, 1, 1000 + id, 4 * id);
            a.onMark(last + 50, mark(last + 50)); // flushes the logs, but the checkpoint never completes: recovery uses mark(last)
            a.beforeStartMarker(last + 50, mark(last + 50));
        }
        try (Stream<Path> fs = Files.list(ad)) {
            part = fs.filter(p -> p.getFileName().toString().startsWith("drops.log.")).findFirst().orElseThrow();
        }
        byte[] b = Files.readAllBytes(part);
        int entries = ((b.length - MaplogDescriptor.HEADER_SIZE) / MaplogDescriptor.ENTRY_SIZE);
        int victim = entries - 20; // after the durable count, 19 valid drops follow
        b[(int) MaplogDescriptor.entryOffset(victim) + 1] ^= 0x40;
        Files.write(part, b);
        CorruptionException e = assertThrows(CorruptionException.class, () -> {
            try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, ad, dir.resolve("p"), RankTreePolicy.levels(Retention.keepLast(16)))) {
                a.recover(mark(last), false);
            }
        });
        assertEquals(part, e.file(), e.getMessage());
        assertEquals(MaplogDescriptor.entryOffset(victim), e.offset(), e.getMessage());
    }
}
