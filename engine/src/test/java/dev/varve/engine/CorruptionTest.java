package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.spi.RecordTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeMap;

import static dev.varve.engine.FixtureSupport.assertTableHolds;
import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.drain;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Corrupt page files are reported (file + offset), never served; a torn WAL tail is cut and the rest recovered. */
@Timeout(600)
class CorruptionTest {
    private static final int PAGE = 4096;
    private static final int PAGE_TYPE_OFFSET = 12;
    private static final int TYPE_LEAF = 3;
    private static final int TYPE_OVERFLOW = 4;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).partitions(1).build();
    }

    private static byte[] key(int i) {
        return utf8(String.format("key-%06d", i));
    }

    /** Index of a page of {@code type} near the middle of the file (after the header page), or -1. */
    private static int pageOfType(Path file, int type) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        int pages = b.capacity() / PAGE - 1;
        for (int d = 0; d < pages; d++) {
            for (int index : new int[]{pages / 2 + d, pages / 2 - d}) {
                if (index < 1 || index >= pages) continue;
                if (b.getShort((index + 1) * PAGE + PAGE_TYPE_OFFSET) == type) return index;
            }
        }
        return -1;
    }

    private static void assertNamesFileAndOffset(CorruptionException e, Path file, long pageOffset) {
        String m = e.getMessage();
        assertTrue(m.contains(file.toString()) || m.contains(file.getFileName().toString()), "message names the file " + file + ": " + m);
        assertTrue(m.contains("offset " + pageOffset), "message names the offset " + pageOffset + ": " + m);
        assertEquals(pageOffset, e.offset());
    }

    @Test
    void flippedByteInALeafIsReportedNeverServed() throws IOException {
        TreeMap<byte[], byte[]> model = newModel();
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int i = 0; i < 4000; i++) {
                byte[] v = bytes(i, 60 + i % 90);
                t.put(key(i), v);
                model.put(key(i), v);
            }
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        int index = pageOfType(file, TYPE_LEAF);
        assertTrue(index > 0, "a leaf page in " + file);
        long pageOffset = (long) (index + 1) * PAGE;
        FixtureSupport.flipByte(file, pageOffset + PAGE / 2);

        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            int failed = 0;
            for (var e : model.entrySet()) {
                try {
                    byte[] v = t.get(e.getKey());
                    assertArrayEquals(e.getValue(), v, "a read either fails or returns the stored value");
                } catch (CorruptionException ce) {
                    assertNamesFileAndOffset(ce, file, pageOffset);
                    failed++;
                    // not cached as data: the next read fails again
                    CorruptionException again = assertThrows(CorruptionException.class, () -> t.get(e.getKey()));
                    assertNamesFileAndOffset(again, file, pageOffset);
                }
            }
            assertTrue(failed > 0, "the keys of the damaged leaf must fail to read");
            assertTrue(failed < model.size() / 2, "only the damaged leaf's keys fail (" + failed + ")");
            CorruptionException se = assertThrows(CorruptionException.class, () -> drain(t.scan(null, null)), "a full scan crosses the leaf");
            assertNamesFileAndOffset(se, file, pageOffset);
        }
    }

    @Test
    void flippedByteInAnOverflowPageFailsOnlyThatValue() throws IOException {
        TreeMap<byte[], byte[]> model = newModel();
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int i = 0; i < 40; i++) {
                byte[] v = bytes(i, 30_000);
                t.put(key(i), v);
                model.put(key(i), v);
            }
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        int index = pageOfType(file, TYPE_OVERFLOW);
        assertTrue(index > 0, "an overflow page in " + file);
        long pageOffset = (long) (index + 1) * PAGE;
        FixtureSupport.flipByte(file, pageOffset + 100);
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            int failed = 0;
            for (var e : model.entrySet()) {
                try {
                    assertArrayEquals(e.getValue(), t.get(e.getKey()));
                } catch (CorruptionException ce) {
                    assertNamesFileAndOffset(ce, file, pageOffset);
                    failed++;
                }
            }
            assertEquals(1, failed, "exactly the value whose chain holds the page");
        }
    }

    @Test
    void tornWalTailIsCutEverythingBeforeItRecovered() throws IOException {
        VarveConfig fsync = FixtureSupport.small(dir).walSyncMode(dev.varve.config.WalSyncMode.FSYNC).build();
        TreeMap<byte[], byte[]> model = newModel();
        byte[] lastKey = key(299);
        Varve crashed = Varve.open(fsync);
        Table t0 = crashed.table("t");
        for (int i = 0; i < 300; i++) {
            byte[] v = bytes(i, i % 10 == 0 ? 9000 : 200);
            t0.put(key(i), v);
            if (i < 299) model.put(key(i), v);
        }
        crashed.halt(); // kill -9: every FSYNC write returned once forced, nothing else is flushed
        FixtureSupport.WalRecord last = FixtureSupport.lastWalRecord(dir);
        assertEquals(RecordTypes.DATA_BATCH, last.type(), "the last WAL record is the last put: " + last);
        // the second half of the record never reached the disk: what power loss does to FSYNC's last commit during its
        // fdatasync (never acknowledged), so a torn tail. The segment records that FSYNC wrote it, so an open under
        // LOG_ONLY, which never runs with such a record (WalJudgedByWriterTest: there it is damage), cuts it too.
        FixtureSupport.zero(last.file(), last.offset() + last.length() / 2, last.length() - last.length() / 2);
        VarveConfig cfg = FixtureSupport.small(dir).build(); // LOG_ONLY

        try (Varve store = Varve.open(cfg)) {
            assertNotNull(store.recoveryReport().walTailCut(), "recovery reports the cut: " + store.recoveryReport());
            Table t = store.table("t");
            assertNull(t.get(lastKey), "the torn write is gone");
            assertTableHolds(t, model, "after a torn tail");
            // the store goes on, in a segment of its own mode's after the cut one
            byte[] v = bytes(4242, 500);
            t.put(lastKey, v);
            model.put(lastKey, v);
        }
        for (VarveConfig reopen : new VarveConfig[] {cfg, fsync}) {
            try (Varve store = Varve.open(reopen)) {
                assertNull(store.recoveryReport().walTailCut(), "clean close leaves no torn tail");
                assertTableHolds(store.table("t"), model, "after reopen under " + reopen.walSyncMode());
            }
        }
    }

    @Test
    void corruptPageFileHeaderFailsOpenOrRead() throws IOException {
        try (Varve store = Varve.open(config())) {
            store.table("t").put(key(1), bytes(1, 10));
        }
        Path file = FixtureSupport.pageFile(dir, 1, 0);
        FixtureSupport.flipByte(file, 9); // inside the format version
        try (Varve store = Varve.open(config())) {
            store.table("t").get(key(1));
            fail("a page file with a corrupt header was read");
        } catch (CorruptionException e) {
            assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
        }
    }
}
