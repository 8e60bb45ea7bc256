package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
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

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A store's WAL tail is judged by the walSyncMode that wrote it, not by the one it is reopened under. Before, a LOG_ONLY
 * store whose last record was damaged had that record silently cut, dropping an acknowledged write, when reopened
 * under FSYNC. (The other way round, an FSYNC store's torn last commit opened under LOG_ONLY: CorruptionTest.)
 */
@Timeout(60)
class WalJudgedByWriterTest {
    private static final int KEYS = 50;

    @TempDir
    Path dir;

    /** A store written under {@code mode} that crashed with every put in the WAL only; returns its configuration. */
    private VarveConfig crashedStore(WalSyncMode mode) {
        VarveConfig config = FixtureSupport.small(dir).walSyncMode(mode).build();
        Varve store = Varve.open(config);
        for (int i = 0; i < KEYS; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        store.halt();
        return config;
    }

    /** The offset of the last data batch record in the newest segment, which is the last record: the last put. */
    private static int lastBatch(ByteBuffer b) {
        int last = -1;
        int end = -1;
        for (int off = WalSegmentDescriptor.HEADER_SIZE; off < b.capacity() && b.getInt(off) != 0; off += (b.getInt(off) + 7) & -8) {
            if (b.get(off + WalSegmentDescriptor.TYPE_OFFSET) == 1) last = off;
            end = off;
        }
        assertTrue(last > 0 && last == end, "the last put's batch is the WAL's last record");
        return last;
    }

    /**
     * Zeroes (or, with {@code flip}, inverts) {@code length} bytes from {@code from} of the last put's record in the
     * newest segment; returns that segment and the record's offset.
     */
    private Map.Entry<Path, Integer> damageLastPut(int from, int length, boolean flip) throws IOException {
        Path segment;
        try (Stream<Path> s = Files.list(dir.resolve("wal"))) {
            segment = s.filter(p -> p.getFileName().toString().endsWith(".seg")).sorted().reduce((a, b) -> b).orElseThrow();
        }
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate((int) ch.size()).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(b, 0);
            int last = lastBatch(b);
            byte[] bytes = new byte[length];
            for (int i = 0; flip && i < length; i++) bytes[i] = (byte) ~b.get(last + from + i);
            ch.write(ByteBuffer.wrap(bytes), last + from);
            return Map.entry(segment, last);
        }
    }

    @Test
    void aLogOnlyStoreWhoseLastRecordIsDamagedIsRefusedUnderFsync() throws IOException {
        VarveConfig logOnly = crashedStore(WalSyncMode.LOG_ONLY);
        Map.Entry<Path, Integer> at = damageLastPut(WalSegmentDescriptor.PAYLOAD_OFFSET + 2, 1, true); // a flipped byte
        VarveConfig fsync = logOnly.toBuilder().walSyncMode(WalSyncMode.FSYNC).build();
        Map<Path, byte[]> before = filesUnder(dir);
        for (VarveConfig config : new VarveConfig[] {fsync, logOnly}) {
            CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config).close());
            assertEquals(at.getKey(), e.file());
            assertEquals((long) at.getValue(), e.offset());
            assertTrue(e.getMessage().contains("under LOG_ONLY"), e.getMessage());
            assertSameFiles(before, filesUnder(dir));
        }
    }
}
