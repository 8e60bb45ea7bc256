package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.MappedRegion;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The OS refusing to map the next WAL segment (its address space or {@code vm.max_map_count} exhausted), which the JDK
 * reports as {@code IOException: Map failed} caused by an {@code OutOfMemoryError}: the append that switches fails
 * naming the segment, why and which limits, nothing it asked for is written, and every record acknowledged before is
 * read back once the WAL is reopened. Before, the message said only "cannot open WAL segment 1, prepared as ...".
 */
@Timeout(60)
class WalMapRefusedTest {
    @TempDir
    Path dir;

    /** Refuses to map segment 1's file, as the JDK reports an mmap that failed with ENOMEM. */
    private static final class MapRefused extends ForwardingFileIOFactory {
        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = super.open(file, create);
            if (!file.getFileName().toString().startsWith(WalSegmentDescriptor.fileName(1))) return f;
            return new ForwardingFileIO(f) {
                @Override
                public MappedRegion map(long position, int length) throws IOException {
                    throw new IOException("Map failed", new OutOfMemoryError("Map failed"));
                }
            };
        }
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void aRefusedMappingFailsTheSwitchNamingTheLimitAndLosesNothing(WalSyncMode mode) {
        Random rnd = WalTestSupport.seeded("map-refused");
        List<byte[]> acknowledged = new ArrayList<>();
        long first = -1;
        try (Wal wal = Wal.open(dir, new MapRefused(), SEGMENT_SIZE, mode, Duration.ofMillis(50))) {
            StorageException refused = null;
            for (int i = 0; i < 10 && refused == null; i++) { // 100 KB: past segment 0
                byte[] p = WalTestSupport.randomBytes(rnd, 10_000);
                try {
                    long lsn = wal.append(7, ByteBuffer.wrap(p));
                    wal.commit(lsn);
                    acknowledged.add(p);
                    if (first < 0) first = lsn;
                } catch (StorageException e) {
                    refused = e;
                }
            }
            assertTrue(refused != null, "the switch to segment 1 failed");
            String message = refused.getMessage();
            assertTrue(message.contains(WalSegmentDescriptor.fileName(1)), message);
            assertTrue(message.contains("Map failed") && message.contains("vm.max_map_count") && message.contains("ulimit -v"), message);
            assertThrows(StorageException.class, () -> wal.append(7, ByteBuffer.wrap(new byte[8])), "the failed WAL refuses further appends");
        } catch (StorageException closeRefused) {
            // a failed WAL forces nothing at close: what was appended before is on the segment already
        }
        try (Wal reopened = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, Duration.ofMillis(50))) {
            List<WalTestSupport.Rec> read = readAll(reopened, first);
            assertEquals(acknowledged.size(), read.size(), "every acknowledged record, and nothing of the refused one");
            for (int i = 0; i < acknowledged.size(); i++) assertArrayEquals(acknowledged.get(i), read.get(i).payload());
        }
    }
}
