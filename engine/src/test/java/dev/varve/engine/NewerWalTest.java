package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.wal.WalSegmentDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A WAL a newer release wrote is refused as such, changing nothing. A record type this build did not know was
 * skipped: recovery restored and replayed the pages without those records and a checkpoint made that lasting (an older
 * build did this to a store whose WAL held a newer build's page images, and the store was then unreadable by either).
 * A segment of a newer format version was reported as damage, with the advice to open with the option that truncates
 * a damaged WAL, which would have thrown every record from there away.
 */
@Timeout(60)
class NewerWalTest {
    @TempDir
    Path dir;

    private VarveConfig crashedStore() {
        VarveConfig config = FixtureSupport.small(dir).build();
        Varve store = Varve.open(config);
        for (int i = 0; i < 50; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        store.halt(); // a crash: every put is in the WAL only
        return config;
    }

    @Test
    void aRecordTypeThisBuildDoesNotKnowIsRefusedWithNothingChanged() throws IOException {
        VarveConfig config = crashedStore();
        Path segment = lastSegment();
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate((int) ch.size()).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(b, 0);
            int last = -1;
            for (int off = WalSegmentDescriptor.HEADER_SIZE; off < b.capacity() && b.getInt(off) != 0; off += (b.getInt(off) + 7) & -8) {
                if (b.get(off + WalSegmentDescriptor.TYPE_OFFSET) == 1) last = off; // a data batch
            }
            assertTrue(last > 0, "a batch record in the WAL");
            b.put(last + WalSegmentDescriptor.TYPE_OFFSET, (byte) 16); // a type a newer release might write, its CRC right
            CRC32C crc = new CRC32C();
            crc.update(b.duplicate().limit(last + b.getInt(last)).position(last + WalSegmentDescriptor.LSN_OFFSET));
            b.putInt(last + WalSegmentDescriptor.CRC_OFFSET, (int) crc.getValue());
            ch.write(b.duplicate().position(last).limit(last + WalSegmentDescriptor.PAYLOAD_OFFSET), last); // its CRC and type
        }
        Map<Path, byte[]> before = filesUnder(dir);
        for (boolean readOnly : new boolean[]{false, true}) {
            CorruptionException e = assertThrows(CorruptionException.class,
                    () -> (readOnly ? Varve.openReadOnly(config) : Varve.open(config)).close());
            assertTrue(e.getMessage().contains("type 16") && e.getMessage().contains("newer release"), e.getMessage());
            assertSameFiles(before, filesUnder(dir));
        }
    }

    @Test
    void aSegmentOfANewerFormatVersionIsRefusedAsSuchNotAsDamage() throws IOException {
        VarveConfig config = crashedStore();
        Path segment = lastSegment();
        stampNewerVersion(segment);
        Map<Path, byte[]> before = filesUnder(dir);
        for (boolean readOnly : new boolean[]{false, true}) {
            CorruptionException e = assertThrows(CorruptionException.class,
                    () -> (readOnly ? Varve.openReadOnly(config) : Varve.open(config)).close());
            assertTrue(e.getMessage().contains("unsupported WAL format version " + (WalSegmentDescriptor.FORMAT_VERSION + 1)), e.getMessage());
            assertTrue(!e.getMessage().contains("truncate"), "no advice to cut the WAL: " + e.getMessage());
            assertEquals(segment, e.file());
            assertSameFiles(before, filesUnder(dir));
        }
    }

    /**
     * A newer release that crashed while a WAL_PHYSICAL checkpoint wrote pages: the refusal named the segment's version
     * only inside a report that the interrupted checkpoint's end marker or its WAL "was lost" (missing or damaged),
     * which sends an operator after a loss that did not happen.
     */
    @Test
    void aNewerSegmentBehindAnInterruptedCheckpointIsRefusedAsNewerNotAsALoss() throws IOException {
        VarveConfig config = FixtureSupport.small(dir).recoveryMode(RecoveryMode.WAL_PHYSICAL).build();
        try (Varve store = Varve.open(config)) {
            for (int i = 0; i < 50; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        }
        Path end;
        try (Stream<Path> s = Files.list(dir.resolve("checkpoints"))) {
            end = s.filter(p -> p.getFileName().toString().endsWith("-end.bin")).sorted().reduce((a, b) -> b).orElseThrow();
        }
        Files.delete(end); // the checkpoint the crash cut: start marker only, its pages restored from the WAL
        Path segment = lastSegment();
        stampNewerVersion(segment);
        Map<Path, byte[]> before = filesUnder(dir);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config).close());
        assertTrue(e.getMessage().startsWith("unsupported WAL format version " + (WalSegmentDescriptor.FORMAT_VERSION + 1)), e.getMessage());
        assertFalse(e.getMessage().contains("lost"), "no report of a lost file: " + e.getMessage());
        assertEquals(segment, e.file());
        assertSameFiles(before, filesUnder(dir));
    }

    /** Rewrites the segment's header as a newer release's: the next format version, its CRC right. */
    static void stampNewerVersion(Path segment) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(h, 0);
            h.putInt(WalSegmentDescriptor.VERSION_OFFSET, WalSegmentDescriptor.FORMAT_VERSION + 1);
            CRC32C crc = new CRC32C();
            crc.update(h.duplicate().clear().limit(WalSegmentDescriptor.HEADER_CRC_OFFSET));
            h.putInt(WalSegmentDescriptor.HEADER_CRC_OFFSET, (int) crc.getValue());
            ch.write(h.clear(), 0);
        }
    }

    private Path lastSegment() throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("wal"))) {
            return s.filter(p -> p.getFileName().toString().endsWith(".seg")).sorted().reduce((a, b) -> b).orElseThrow();
        }
    }
}
