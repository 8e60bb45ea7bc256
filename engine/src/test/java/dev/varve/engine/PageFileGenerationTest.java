package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.store.PageFileStamp;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A page file that is whole but not this store's current one — put back from an earlier backup, or copied in from
 * another store — is refused at open, naming it, before anything on disk changes; what crashes and power cuts leave
 * (a checkpoint's page writes cut half-way, a torn generation slot) still opens; a store of an earlier build opens
 * and gains the checks as its files are written.
 */
@Timeout(120)
class PageFileGenerationTest {
    /** Where the generation slots of a page file's header page are (PartitionFileHeader). */
    private static final int[] SLOTS = {256, 512};

    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir, RecoveryMode mode) {
        return FixtureSupport.small(dir).partitions(1).recoveryMode(mode).build();
    }

    /** Puts keys {@code from} to {@code to} (exclusive) into table t, 200-byte values told apart by key. */
    static void fill(Varve store, int from, int to) {
        Table t = store.table("t");
        for (int k = from; k < to; k++) t.put(utf8(String.format("key-%06d", k)), FixtureSupport.bytes(k, 200));
    }

    /** Table t holds the first {@code count} keys {@link #fill} puts, with their values. */
    static void assertHolds(Varve store, int count) {
        Table t = store.table("t");
        for (int k = 0; k < count; k++)
            assertArrayEquals(FixtureSupport.bytes(k, 200), t.get(utf8(String.format("key-%06d", k))), "key " + k);
    }

    @Test
    void aPageFileRolledBackToAnEarlierCopyIsRefusedAndNothingChanges() throws Exception {
        Path dir = tmp.resolve("store");
        try (Varve store = Varve.open(config(dir, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 0, 500);
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        Path aside = tmp.resolve("aside.page");
        Files.copy(file, aside);
        Path wholeCopy = tmp.resolve("whole-copy");
        copyTree(dir, wholeCopy);
        try (Varve store = Varve.open(config(dir, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 500, 1000);
            store.checkpoint().get(30, TimeUnit.SECONDS);
            fill(store, 1000, 1100);
        }
        Files.copy(aside, file, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(dir);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(dir, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains(file.getFileName().toString()) && e.getMessage().contains("earlier backup"), e.getMessage());
        assertSame(before, contents(dir));
        // a read-only open and the verifier refuse it the same way
        assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config(dir, RecoveryMode.WAL_PHYSICAL)).close());
        assertTrue(StoreVerifier.verify(config(dir, RecoveryMode.WAL_PHYSICAL)).damage().stream()
                .anyMatch(d -> d.file().equals(file) && d.what().contains("earlier backup")));
        assertSame(before, contents(dir));
        // the whole store put back from the same moment is an earlier consistent state, and opens as such
        try (Varve store = Varve.open(config(wholeCopy, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 500);
        }
    }

    @Test
    void aPageFileOfAnotherStoreWithTheSameNameIsRefused() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        for (Path dir : new Path[]{a, b}) {
            try (Varve store = Varve.open(config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
                fill(store, 0, 300);
            }
        }
        Path file = FixtureSupport.pageFile(a, 1, 0);
        Files.copy(FixtureSupport.pageFile(b, 1, 0), file, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(a);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(a, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains(file.getFileName().toString()) && e.getMessage().contains("belongs to another store"), e.getMessage());
        assertSame(before, contents(a));
    }

    /**
     * Copies of the same store carry the same store id, and their generations tell them apart: a page file from a
     * later state of the store (written by a checkpoint this copy never started), one a diverged copy's checkpoint
     * wrote (a completed checkpoint's generation, but not among this copy's files), and a listed page file that is
     * gone are each refused, naming the file.
     */
    @Test
    void aPageFileFromALaterOrADivergedCopyOfTheStoreIsRefused() throws Exception {
        Path dir = tmp.resolve("store");
        VarveConfig cfg = config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 0, 300);
        }
        Path earlier = tmp.resolve("earlier");
        copyTree(dir, earlier);
        Path diverged = tmp.resolve("diverged");
        copyTree(dir, diverged);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) { // the store goes on: checkpoints the earlier copy never started
            fill(store, 300, 600);
            store.checkpoint().get(30, TimeUnit.SECONDS);
            fill(store, 600, 700);
        }
        Path file = FixtureSupport.pageFile(earlier, 1, 0);
        byte[] own = Files.readAllBytes(file);
        Files.copy(FixtureSupport.pageFile(dir, 1, 0), file, StandardCopyOption.REPLACE_EXISTING);
        CorruptionException later = assertThrows(CorruptionException.class, () -> Varve.open(config(earlier, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(later.getMessage().contains("never started a checkpoint after") && later.getMessage().contains(file.getFileName().toString()),
                later.getMessage());
        Files.write(file, own);
        try (Varve store = Varve.open(config(diverged, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) { // a table this copy alone has
            store.table("u").put(utf8("k"), utf8("v"));
        }
        try (Varve store = Varve.open(config(earlier, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) { // more checkpoints than the diverged copy's
            for (int round = 0; round < 3; round++) {
                fill(store, 300, 320);
                store.checkpoint().get(30, TimeUnit.SECONDS);
            }
        }
        Path foreign = FixtureSupport.pageFile(earlier, 2, 0);
        Files.copy(FixtureSupport.pageFile(diverged, 2, 0), foreign);
        CorruptionException unlisted = assertThrows(CorruptionException.class, () -> Varve.open(config(earlier, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(unlisted.getMessage().contains("does not list it") && unlisted.getMessage().contains(foreign.getFileName().toString()),
                unlisted.getMessage());
        Files.delete(foreign);
        try (Varve store = Varve.open(config(earlier, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 300);
        }
        Files.delete(file);
        CorruptionException gone = assertThrows(CorruptionException.class, () -> Varve.open(config(earlier, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(gone.getMessage().contains("missing") && gone.getMessage().contains(file.getFileName().toString()), gone.getMessage());
    }

    /**
     * Two copies of one store go on apart, one writing the table's partition, the other other tables, with more
     * checkpoints: the first copy's page file, put into the second, carries a generation the second completed but
     * whose end marker lists the file at an earlier checkpoint, so it is refused, naming the file.
     */
    @Test
    void aPageFileADivergedCopyWroteUnderACheckpointIdThisStoreAlsoCompletedIsRefused() throws Exception {
        Path dir = tmp.resolve("store");
        VarveConfig cfg = config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 0, 300);
        }
        Path copy = tmp.resolve("copy");
        copyTree(dir, copy);
        try (Varve store = Varve.open(config(copy, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) { // the copy rewrites table t
            fill(store, 0, 300);
            store.checkpoint().get(30, TimeUnit.SECONDS);
        }
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) { // the store writes other tables only, with more checkpoints
            for (int round = 0; round < 5; round++) {
                store.table("u").put(utf8("k" + round), utf8("v"));
                store.checkpoint().get(30, TimeUnit.SECONDS);
            }
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        Files.copy(FixtureSupport.pageFile(copy, 1, 0), file, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(dir);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(cfg, UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains("from another copy of the store") && e.getMessage().contains(file.getFileName().toString()),
                e.getMessage());
        assertSame(before, contents(dir));
    }

    /**
     * A crash in the middle of a checkpoint's page-file fsyncs leaves one file stamped with the interrupted
     * checkpoint and the others not: the store opens, in either mode, with every write; its restore lists the files,
     * so a copy of a page file from before the crash is still refused afterwards.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void aCrashBetweenTheFsyncsOfACheckpointOpensAndRecovers(RecoveryMode mode) throws Exception {
        for (RecoveryMode reopenAs : RecoveryMode.values()) {
            Path dir = tmp.resolve(mode + "-" + reopenAs);
            VarveConfig cfg = FixtureSupport.small(dir).partitions(4).recoveryMode(mode).build();
            FaultyFileIOFactory io = new FaultyFileIOFactory(mode.ordinal() * 2L + reopenAs.ordinal());
            Varve store = Varve.open(cfg, io);
            fill(store, 0, 800);
            store.checkpoint().get(30, TimeUnit.SECONDS);
            Path file = FixtureSupport.pageFile(dir, 1, 0);
            Path aside = tmp.resolve(mode + "-" + reopenAs + ".page");
            Files.copy(file, aside);
            fill(store, 800, 1600); // every partition of the table changes
            io.crashAt(FaultyFileIOFactory.nth(2, op -> op.kind() == FaultyFileIOFactory.Kind.FORCE && op.names(".page")));
            assertThrows(ExecutionException.class, () -> store.checkpoint().get(30, TimeUnit.SECONDS));
            store.halt();
            io.powerLoss();
            VarveConfig reopen = cfg.toBuilder().recoveryMode(reopenAs).build();
            try (Varve recovered = Varve.open(reopen, UnforcedFileIOFactory.INSTANCE)) {
                assertNotEquals("none", recovered.recoveryReport().restoredFrom(), "the crash interrupted the checkpoint");
                assertHolds(recovered, 1600);
            }
            try (Varve again = Varve.open(reopen, UnforcedFileIOFactory.INSTANCE)) {
                assertHolds(again, 1600);
            }
            Files.copy(aside, file, StandardCopyOption.REPLACE_EXISTING);
            CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(reopen, UnforcedFileIOFactory.INSTANCE).close());
            assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
        }
    }

    /**
     * A power cut tears the slot a checkpoint writes, never the one holding the file's generation: with that slot
     * garbage the store opens with every write, and the next checkpoint writes the slot whole again.
     */
    @Test
    void aTornGenerationSlotStillOpens() throws Exception {
        Path dir = tmp.resolve("torn");
        VarveConfig cfg = config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 0, 400);
            store.checkpoint().get(30, TimeUnit.SECONDS);
            fill(store, 400, 800);
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        long generation = stamp(dir, 1).generation();
        assertTrue(generation > 1, "stamped by the checkpoints: " + generation);
        int older = slotGeneration(file, 0) == generation ? 1 : 0;
        byte[] garbage = new byte[20];
        Arrays.fill(garbage, (byte) 0x5a);
        write(file, SLOTS[older], garbage);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 800);
            fill(store, 800, 900);
        }
        long next = stamp(dir, 1).generation();
        assertTrue(next > generation, "the next checkpoint stamped the file again: " + next);
        assertEquals(next, slotGeneration(file, older), "the torn slot was written whole again");
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 900);
        }
    }

    /**
     * A store of an earlier build (page file header and markers of format version 1) opens and keeps every entry; the
     * files its checkpoints write from then on carry the store id and generation, so a rolled-back one is refused. A
     * page file of a newer format than this build reads is refused as such.
     */
    @Test
    void aStoreOfAnEarlierFormatOpensAndGainsTheChecks() throws Exception {
        Path dir = tmp.resolve("old");
        VarveConfig cfg = config(dir, RecoveryMode.WAL_PHYSICAL);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            fill(store, 0, 400);
        }
        toVersion1(dir);
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        assertEquals(new PageFileStamp(1, 0, 0), stamp(dir, 1));
        Path aside = tmp.resolve("old.page");
        Files.copy(file, aside);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 400);
            fill(store, 400, 700);
        }
        PageFileStamp upgraded = stamp(dir, 1);
        assertEquals(1, upgraded.version(), "the fixed header is left as it was");
        assertNotEquals(0, upgraded.storeId());
        assertTrue(upgraded.generation() > 0);
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            assertHolds(store, 700);
        }
        byte[] current = Files.readAllBytes(file);
        Files.copy(aside, file, StandardCopyOption.REPLACE_EXISTING);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(cfg, UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
        Files.write(file, current);
        // a newer format (its fixed fields as this build's under their CRC), and a damaged version field
        byte[] header = Arrays.copyOf(current, 32);
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(8, 3).putInt(28, crc(header, 28));
        write(file, 0, header);
        CorruptionException newer = assertThrows(CorruptionException.class, () -> Varve.open(cfg, UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(newer.getMessage().contains("newer release") && newer.getMessage().contains(file.getFileName().toString()), newer.getMessage());
        write(file, 8, new byte[]{3, 0, 0, 1});
        CorruptionException damaged = assertThrows(CorruptionException.class, () -> Varve.open(cfg, UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(damaged.getMessage().contains("checksum mismatch") && damaged.getMessage().contains(file.getFileName().toString()), damaged.getMessage());
    }

    // ---------------------------------------------------------------- helpers

    private static PageFileStamp stamp(Path dir, int tableId) {
        try (PageStore pages = new PageStore(FileIOFactory.standard(), dir.resolve("pages"), 4096)) {
            return pages.stamp(dev.varve.core.page.PageId.fileId(tableId, 0));
        }
    }

    private static long slotGeneration(Path file, int slot) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        return b.getLong(SLOTS[slot] + 8);
    }

    /** Rewrites the store's page file headers and checkpoint markers as an earlier build wrote them (version 1). */
    private static void toVersion1(Path dir) throws IOException {
        for (Path p : FixtureSupport.pageFiles(dir)) {
            byte[] page = new byte[4096];
            byte[] was = Files.readAllBytes(p);
            System.arraycopy(was, 0, page, 0, 20);
            ByteBuffer.wrap(page).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 1).putInt(20, crc(page, 20));
            write(p, 0, page);
        }
        try (Stream<Path> s = Files.list(dir.resolve("checkpoints"))) {
            for (Path p : s.filter(f -> f.getFileName().toString().matches("cp-\\d+-(start|end)\\.bin")).toList()) {
                byte[] m = Files.readAllBytes(p);
                ByteBuffer b = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
                int files = b.getInt(48);
                byte[] v1 = Arrays.copyOf(m, 52 + 12 * files + 4);
                ByteBuffer o = ByteBuffer.wrap(v1).order(ByteOrder.LITTLE_ENDIAN);
                o.putInt(8, 1).putInt(v1.length - 4, crc(v1, v1.length - 4));
                Files.write(p, v1);
            }
        }
    }

    private static int crc(byte[] b, int length) {
        CRC32C c = new CRC32C();
        c.update(b, 0, length);
        return (int) c.getValue();
    }

    private static void write(Path file, long at, byte[] bytes) throws IOException {
        try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(bytes), at);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(target);
                else Files.copy(p, target);
            }
        }
    }

    static Map<Path, byte[]> contents(Path dir) throws IOException {
        Map<Path, byte[]> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.filter(Files::isRegularFile).toList()) out.put(dir.relativize(p), Files.readAllBytes(p));
        }
        return out;
    }

    static void assertSame(Map<Path, byte[]> before, Map<Path, byte[]> after) {
        assertEquals(before.keySet(), after.keySet(), "the refused open created or deleted files");
        for (Path p : before.keySet()) assertArrayEquals(before.get(p), after.get(p), p + " changed");
    }
}
