package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.ToLongFunction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A recovery file written by {@link RecoveryFileWriter} reads back through {@link RecoveryFileReader} page for page
 * with every codec — across the writer's 1 MiB chunks — and damage is refused with the file and the offset of the
 * entry or field that is wrong.
 */
@Timeout(60)
class RecoveryFileRoundTripTest {
    private static final int PAGE_SIZE = 4096;
    private static final int PAGES = 400; // 1.6 MB plain: several write chunks
    private static final long CHECKPOINT = 7;
    /** Each test page has an unused middle [USED_LOW, USED_HIGH) holding garbage, as a slotted page would. */
    private static final int USED_LOW = 600;
    private static final int USED_HIGH = 3000;
    private static final ToLongFunction<Page> UNUSED_MIDDLE = p -> ((long) USED_LOW << 32) | USED_HIGH;

    @TempDir
    Path dir;

    /** What a written file holds: the marker that describes it and the page images that went in. */
    private record Written(CheckpointMarkers markers, CheckpointMarker start, Map<Long, byte[]> pages) {
    }

    /** Pages whose used parts are compressible text-like bytes and whose unused middle is random garbage. */
    private static byte[] page(long pageId, SplittableRandom r) {
        byte[] b = new byte[PAGE_SIZE];
        for (int i = 0; i < PAGE_SIZE; i++) b[i] = (byte) ('a' + (i + pageId) % 7);
        for (int i = USED_LOW; i < USED_HIGH; i++) b[i] = (byte) r.nextInt();
        ByteBuffer.wrap(b).putLong(0, pageId);
        return b;
    }

    private Written write(PageCodec codec, int pages) {
        CheckpointMarkers markers = new CheckpointMarkers(FileIOFactory.standard(), dir);
        Map<Long, byte[]> written = new LinkedHashMap<>();
        SplittableRandom r = new SplittableRandom(42);
        ByteBuffer frame = ByteBuffer.allocateDirect(PAGE_SIZE);
        int entries;
        long bytes;
        try (RecoveryFileWriter w = new RecoveryFileWriter(FileIOFactory.standard(), markers.recoveryFilePath(CHECKPOINT, 0), CHECKPOINT,
                PAGE_SIZE, codec, UNUSED_MIDDLE)) {
            for (long id = 1; id <= pages; id++) {
                byte[] image = page(id, r);
                frame.put(0, image);
                w.append(id, new Page(frame, 0, PAGE_SIZE));
                written.put(id, image);
            }
            w.finish();
            entries = w.entries();
            bytes = w.bytes();
        }
        CheckpointMarker start = new CheckpointMarker(CheckpointMarker.START, CHECKPOINT, 1000, 500, CheckpointMarker.RECOVERY_FILES,
                codec.ordinal(), new int[]{entries}, new long[]{bytes});
        return new Written(markers, start, written);
    }

    private static Map<Long, byte[]> read(Written w) {
        Map<Long, byte[]> read = new LinkedHashMap<>();
        RecoveryFileReader.read(w.markers, w.start, 0, PAGE_SIZE, (pageId, image) -> {
            byte[] b = new byte[PAGE_SIZE];
            image.get(0, b);
            read.put(pageId, b);
        });
        return read;
    }

    @ParameterizedTest
    @EnumSource(PageCodec.class)
    void everyPageReadsBackAsWritten(PageCodec codec) throws IOException {
        Written w = write(codec, PAGES);
        assertEquals(PAGES, w.start.fileEntries()[0]);
        assertEquals(Files.size(w.markers.recoveryFilePath(CHECKPOINT, 0)), w.start.fileBytes()[0], "the writer counts what it wrote");
        Map<Long, byte[]> read = read(w);
        assertEquals(new ArrayList<>(w.pages.keySet()), new ArrayList<>(read.keySet()), "every page, in write order");
        for (Map.Entry<Long, byte[]> e : w.pages.entrySet()) {
            byte[] expected = e.getValue().clone();
            if (codec == PageCodec.SKIP_GARBAGE) Arrays.fill(expected, USED_LOW, USED_HIGH, (byte) 0); // restored as zeros
            assertArrayEquals(expected, read.get(e.getKey()), codec + " page " + e.getKey());
        }
    }

    @Test
    void compressingCodecsWriteLessThanPlainPages() {
        long plain = write(PageCodec.DISABLED, PAGES).start.fileBytes()[0];
        long skipGarbage = write(PageCodec.SKIP_GARBAGE, PAGES).start.fileBytes()[0];
        long snappy = write(PageCodec.SNAPPY, PAGES).start.fileBytes()[0];
        long header = RecoveryFileFormat.HEADER_BYTES;
        assertEquals(header + (long) PAGES * (RecoveryFileFormat.ENTRY_HEADER_BYTES + PAGE_SIZE), plain);
        assertEquals(header + (long) PAGES * (RecoveryFileFormat.ENTRY_HEADER_BYTES + 8 + PAGE_SIZE - (USED_HIGH - USED_LOW)), skipGarbage,
                "SKIP_GARBAGE stores the page without its unused middle, plus its bounds");
        assertTrue(snappy < plain, "snappy compresses the repetitive used parts: " + snappy + " of " + plain);
    }

    @ParameterizedTest
    @EnumSource(PageCodec.class)
    void aFlippedPayloadByteIsReportedAtItsEntry(PageCodec codec) throws IOException {
        Written w = write(codec, 3);
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        long firstEntry = RecoveryFileFormat.HEADER_BYTES;
        flip(file, firstEntry + RecoveryFileFormat.ENTRY_HEADER_BYTES + 5);
        CorruptionException e = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(file, e.file());
        assertEquals(firstEntry, e.offset(), e.getMessage());
        assertTrue(e.getMessage().contains("checksum mismatch (page 1)"), e.getMessage());
    }

    @Test
    void aFlippedEntryHeaderIsReportedAtItsEntry() throws IOException {
        Written w = write(PageCodec.DISABLED, 3);
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        long secondEntry = RecoveryFileFormat.HEADER_BYTES + RecoveryFileFormat.ENTRY_HEADER_BYTES + PAGE_SIZE;
        flip(file, secondEntry + 2); // inside the page id
        CorruptionException e = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(secondEntry, e.offset(), e.getMessage());
    }

    @Test
    void aDamagedHeaderIsReportedAtItsField() throws IOException {
        Written w = write(PageCodec.SNAPPY, 3);
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        flip(file, 0);
        CorruptionException magic = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(0, magic.offset());
        assertTrue(magic.getMessage().contains("bad magic"), magic.getMessage());
        flip(file, 0);
        flip(file, 14); // the checkpoint id: its CRC no longer matches
        CorruptionException crc = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(24, crc.offset(), crc.getMessage());
    }

    /** A flipped bit in the version is damage the header's checksum finds, not a file of another release. */
    @Test
    void aDamagedVersionIsAChecksumMismatchNotAnotherVersion() throws IOException {
        Written w = write(PageCodec.SNAPPY, 3);
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        flip(file, 10); // inside the version
        CorruptionException e = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(24, e.offset(), e.getMessage());
        assertEquals("recovery file header checksum mismatch", e.what());
    }

    @Test
    void aFileOfAnotherCheckpointOrPageSizeIsRefused() {
        Written w = write(PageCodec.DISABLED, 2);
        CheckpointMarker other = new CheckpointMarker(CheckpointMarker.START, CHECKPOINT + 1, 0, 0, CheckpointMarker.RECOVERY_FILES,
                0, w.start.fileEntries(), w.start.fileBytes());
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        Path otherPath = w.markers.recoveryFilePath(CHECKPOINT + 1, 0);
        try {
            Files.copy(file, otherPath);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        CorruptionException id = assertThrows(CorruptionException.class,
                () -> RecoveryFileReader.read(w.markers, other, 0, PAGE_SIZE, (p, i) -> { }));
        assertEquals(12, id.offset());
        assertTrue(id.getMessage().contains("belongs to checkpoint " + CHECKPOINT), id.getMessage());
        // a page size the header's checksum vouches for is the configuration's, not damage
        StorageException size = assertThrows(StorageException.class,
                () -> RecoveryFileReader.read(w.markers, w.start, 0, 8192, (p, i) -> { }));
        assertFalse(size instanceof CorruptionException, size.toString());
        assertTrue(size.getMessage().contains("written with pageSize " + PAGE_SIZE + " but the store is configured with 8192"), size.getMessage());
    }

    @Test
    void aShortOrMissingFileIsRefusedAgainstTheMarker() throws IOException {
        Written w = write(PageCodec.DISABLED, 3);
        Path file = w.markers.recoveryFilePath(CHECKPOINT, 0);
        long full = Files.size(file);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(full - 100);
        }
        CorruptionException shorter = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(full - 100, shorter.offset());
        assertTrue(shorter.getMessage().contains("the start marker recorded " + full), shorter.getMessage());

        Written fewer = new Written(w.markers, new CheckpointMarker(CheckpointMarker.START, CHECKPOINT, 0, 0, CheckpointMarker.RECOVERY_FILES, 0,
                new int[]{4}, new long[]{full - 100}), w.pages);
        CorruptionException torn = assertThrows(CorruptionException.class, () -> read(fewer));
        long thirdEntry = RecoveryFileFormat.HEADER_BYTES + 2L * (RecoveryFileFormat.ENTRY_HEADER_BYTES + PAGE_SIZE);
        assertEquals(thirdEntry, torn.offset(), "the torn last entry: " + torn.getMessage());

        Files.delete(file);
        CorruptionException missing = assertThrows(CorruptionException.class, () -> read(w));
        assertEquals(file, missing.file());
        assertTrue(missing.getMessage().contains("missing"), missing.getMessage());
    }

    @Test
    void entryCountsMustMatchTheMarker() {
        Written w = write(PageCodec.SKIP_GARBAGE, 3);
        Written more = new Written(w.markers, new CheckpointMarker(CheckpointMarker.START, CHECKPOINT, 0, 0, CheckpointMarker.RECOVERY_FILES, 1,
                new int[]{4}, w.start.fileBytes()), w.pages);
        CorruptionException e = assertThrows(CorruptionException.class, () -> read(more));
        assertTrue(e.getMessage().contains("holds 3 entries, the start marker recorded 4"), e.getMessage());
    }

    static void flip(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset);
            b.put(0, (byte) (b.get(0) ^ 0x5A)).rewind();
            ch.write(b, offset);
        }
    }
}
