package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code varve verify} of a store holding a file a newer release wrote (the store was opened by it, then this build is
 * run again): the store cannot be checked by this build, which is no damage. A page file or a checkpoint marker of a
 * newer format was listed as a damaged spot (exit 1, "damage found"), where a WAL segment of a newer format made the
 * store unusable to check (exit 2) — an operator would go after damage that is not there.
 */
@Timeout(60)
class NewerFormatVerifyTest {
    @TempDir
    Path dir;

    private VarveConfig closedStore() {
        VarveConfig config = FixtureSupport.small(dir).build();
        try (Varve store = Varve.open(config)) {
            for (int i = 0; i < 50; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        }
        return config;
    }

    @Test
    void aPageFileOfANewerFormatLeavesTheStoreUncheckedNotDamaged() throws IOException {
        VarveConfig config = closedStore();
        Path file = newest(dir.resolve("pages"), ".page");
        restamp(file, 28, 28); // the fixed header's CRC covers [0, 28)
        assertRefusedAsNewer(config, file);
    }

    @Test
    void aCheckpointMarkerOfANewerFormatLeavesTheStoreUncheckedNotDamaged() throws IOException {
        VarveConfig config = closedStore();
        Path file = newest(dir.resolve("checkpoints"), "-end.bin");
        int crcAt = (int) Files.size(file) - 4; // the CRC, last, covers everything before it
        restamp(file, crcAt, crcAt);
        assertRefusedAsNewer(config, file);
    }

    @Test
    void aWalSegmentOfANewerFormatLeavesTheStoreUncheckedNotDamaged() throws IOException {
        VarveConfig config = closedStore();
        Path file = newest(dir.resolve("wal"), ".seg");
        NewerWalTest.stampNewerVersion(file);
        assertRefusedAsNewer(config, file);
    }

    private void assertRefusedAsNewer(VarveConfig config, Path file) throws IOException {
        Map<Path, byte[]> before = filesUnder(dir);
        StoreVerifier.Report report = StoreVerifier.verify(config);
        assertEquals(List.of(), report.damage(), "no damage: " + report.damage());
        assertNotNull(report.unusable(), "the store cannot be checked by this build");
        assertTrue(report.unusable().contains("newer release") && report.unusable().contains(file.getFileName().toString()), report.unusable());
        assertSameFiles(before, filesUnder(dir));
    }

    /** The format version at offset 8 raised by one, the CRC over [0, crcEnd) rewritten at {@code crcAt}. */
    private static void restamp(Path file, int crcEnd, int crcAt) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(8, b.getInt(8) + 1);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, crcEnd);
        b.putInt(crcAt, (int) crc.getValue());
        Files.write(file, bytes);
    }

    private static Path newest(Path in, String suffix) throws IOException {
        try (Stream<Path> s = Files.list(in)) {
            return s.filter(p -> p.getFileName().toString().endsWith(suffix)).sorted().reduce((a, b) -> b).orElseThrow();
        }
    }
}
