package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Maplog format's log: each kind, a torn tail, a lost part. */
@Timeout(60)
class MaplogFileTest {
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final int NODE = 16;

    @TempDir
    Path dir;

    private static int levelOf(Kind kind) {
        return kind == Kind.MAPPINGS || kind == Kind.UPLINKS ? 0 : MaplogDescriptor.NO_LEVEL;
    }

    private MaplogFile open(Path path, Kind kind, long partEntries, MaplogFile.Missing missing) {
        return new MaplogFile(IO, path, kind, levelOf(kind), NODE, partEntries, missing);
    }

    private static void fill(MaplogFile log, int n) {
        for (int i = 0; i < n; i++) log.append(i, 10L * i, 100L * i);
        log.force();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void eachKindStoresItsCodeAndReadsBackOnlyAsItself(Kind kind) throws IOException {
        Path path = dir.resolve(kind + ".log");
        try (MaplogFile log = open(path, kind, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE)) {
            fill(log, 5);
        }
        ByteBuffer header = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(kind.code, header.getInt(MaplogDescriptor.KIND_OFFSET), "the stored code");
        assertEquals(MaplogDescriptor.entryOffset(5), Files.size(path));
        try (MaplogFile log = open(path, kind, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            assertEquals(5, log.count());
            assertFalse(log.olderMarks());
            long[] a = new long[5];
            long[] b = new long[5];
            long[] c = new long[5];
            log.read(0, 5, a, b, c);
            assertArrayEquals(new long[]{0, 1, 2, 3, 4}, a);
            assertArrayEquals(new long[]{0, 10, 20, 30, 40}, b);
            assertArrayEquals(new long[]{0, 100, 200, 300, 400}, c);
        }
        for (Kind other : Kind.values()) {
            if (other == kind) continue;
            CorruptionException e = assertThrows(CorruptionException.class, () -> open(path, other, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT),
                    kind + " opened as " + other);
            assertEquals(path, e.file());
            assertEquals(MaplogDescriptor.KIND_OFFSET, e.offset());
        }
    }

    /** Once reclamation deleted a Maplog's first file, the tools find its node size in the oldest portion left. */
    @Test
    void theNodeSizeIsReadFromTheOldestPartLeft() throws IOException {
        Path level = dir.resolve("level-1");
        Files.createDirectories(level);
        Path path = level.resolve("maplog-L0.log");
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CREATE)) {
            fill(log, 14);
            log.force();
            assertEquals(8, log.reclaimBefore(10)); // parts [0, 4) and [4, 8) go
        }
        assertFalse(Files.exists(path));
        assertEquals(MaplogParts.firstPart(IO, path), level.resolve("maplog-L0.log.8"));
        assertEquals(NODE, ArchiveFileCheck.nodeEntries(IO, dir));
    }

    @Test
    void marksOfAnOlderArchiveAreStoredAsUplinksAndStillRead() {
        Path path = dir.resolve(ArchiveMarksDescriptor.FILE);
        try (MaplogFile older = new MaplogFile(IO, path, Kind.UPLINKS, MaplogDescriptor.NO_LEVEL, NODE, MaplogFile.Missing.CREATE)) {
            fill(older, 2);
        }
        try (MaplogFile marks = open(path, Kind.MARKS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            assertTrue(marks.olderMarks());
            assertEquals(2, marks.count());
        }
        Path uplinks = dir.resolve("skippy-uplinks-L0.log");
        try (MaplogFile real = open(uplinks, Kind.UPLINKS, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE)) {
            fill(real, 1);
        }
        assertThrows(CorruptionException.class, () -> open(uplinks, Kind.MARKS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT),
                "a Skippy uplink log (level 0) is no marks file");
    }

    @Test
    void aTornTailIsCutOnlyPastWhatIsDurable() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        try (MaplogFile log = open(path, Kind.MAPPINGS, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE)) {
            fill(log, 10);
        }
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[MaplogDescriptor.ENTRY_SIZE / 2 + 3]), ch.size()); // half an entry, torn
        }
        try (MaplogFile log = open(path, Kind.MAPPINGS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            assertEquals(10, log.count());
            log.checkDurable(10); // the tail lies past what the mark made durable
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.checkDurable(11));
            assertEquals(path, e.file());
            assertEquals(MaplogDescriptor.entryOffset(10), e.offset());
            log.truncate(10);
        }
        assertEquals(MaplogDescriptor.entryOffset(10), Files.size(path), "the torn tail was cut");
        try (MaplogFile log = open(path, Kind.MAPPINGS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            log.checkDurable(-1);
            assertEquals(10, log.count());
        }
    }

    /**
     * Records appended together and forced once (the drop log's, several drops of one retention decision) may lose an
     * earlier 512-byte sector to a power cut and keep a later one: the gap reads as zeros and was never forced, so past
     * what the mark made durable it is a torn tail even with valid records after it; a damaged record that is not
     * zeros, with valid records after it, stays damage.
     */
    @Test
    void aSectorLostToAPowerCutIsATornTailButAFlippedByteIsDamage() throws IOException {
        Path path = dir.resolve("drops.log");
        try (MaplogFile log = open(path, Kind.DROPS, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE)) {
            fill(log, 20); // entries 15 to 19 lie in the second sector
        }
        byte[] original = Files.readAllBytes(path);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[512 - (int) MaplogDescriptor.entryOffset(12)]), MaplogDescriptor.entryOffset(12)); // 12-14 lost
        }
        try (MaplogFile log = open(path, Kind.DROPS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            assertEquals(12, log.count());
            log.checkDurable(12);
            log.checkDurable(-1);
            assertThrows(CorruptionException.class, () -> log.checkDurable(13), "a lost sector the mark made durable is damage");
            log.truncate(12);
        }
        assertEquals(MaplogDescriptor.entryOffset(12), Files.size(path), "the gap and the records after it were cut");
        Files.write(path, original);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{1}), MaplogDescriptor.entryOffset(12) + 3); // one flipped byte
        }
        try (MaplogFile log = open(path, Kind.DROPS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT)) {
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.checkDurable(-1));
            assertEquals(MaplogDescriptor.entryOffset(12), e.offset());
        }
    }

    @Test
    void aLostMiddlePartIsNamed() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CREATE)) {
            fill(log, 10); // parts at 0, 4 and 8
        }
        Path middle = dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 4));
        assertTrue(Files.exists(middle));
        Files.delete(middle);
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CORRUPT));
        assertEquals(middle, e.file());
    }

    @Test
    void aLostLastPartIsNamedWhenTheMarkNeedsIt() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CREATE)) {
            fill(log, 10);
        }
        Path last = dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 8));
        Files.delete(last);
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CORRUPT)) {
            assertEquals(8, log.count());
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.checkDurable(10));
            assertEquals(last, e.file());
        }
    }

    @Test
    void makeRoomWritesTheBufferOnlyWhenTheEntriesAskedForWouldNotFit() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        Path second = dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 4));
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CREATE)) {
            for (int i = 0; i < 6; i++) log.append(i, 10L * i, 100L * i);
            assertEquals(MaplogDescriptor.entryOffset(0), Files.size(path), "appends are buffered");
            log.makeRoom(1 << 20); // more than any buffer holds: written now, the new part created
            assertEquals(MaplogDescriptor.entryOffset(4), Files.size(path));
            assertEquals(MaplogDescriptor.entryOffset(2), Files.size(second));
            log.append(6, 60, 600);
            log.makeRoom(1); // fits: nothing written, so the append it made room for stays in memory
            log.append(7, 70, 700);
            assertEquals(MaplogDescriptor.entryOffset(2), Files.size(second));
            long[] pages = new long[8];
            log.read(0, 8, pages, null, null);
            assertArrayEquals(new long[]{0, 1, 2, 3, 4, 5, 6, 7}, pages, "read across the files and the buffer");
            log.force();
            assertEquals(MaplogDescriptor.entryOffset(4), Files.size(second));
        }
    }

    /**
     * Each part is created ahead of need, off the appending thread, while the part before it fills: the archiver that
     * appends the Maplog created every part itself before, 30 ms of fsyncs each, while the capture buffer filled. A
     * clean close deletes the part created ahead and not used.
     */
    @Test
    void partsAreCreatedAheadOfNeedOffTheAppendingThreadAndACleanCloseLeavesNone() throws Exception {
        Path path = dir.resolve("maplog-L0.log");
        CreatorIO io = new CreatorIO();
        try (MaplogFile log = new MaplogFile(io, path, Kind.MAPPINGS, 0, NODE, 4, MaplogFile.Missing.CREATE)) {
            fill(log, 5); // parts at 0 and 4: the one at 4 made here, the first part switch; the one at 8 begun ahead
            Path ahead = dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 8));
            awaitCreated(io, ahead);
            assertEquals(MaplogDescriptor.entryOffset(0), Files.size(ahead), "a header, no entries");
            for (int i = 5; i < 13; i++) log.append(i, 10L * i, 100L * i);
            log.force(); // parts at 8 and 12 in use now, 16 begun ahead
            awaitCreated(io, dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 16)));
            String appender = Thread.currentThread().getName();
            assertEquals(appender, io.creator.get(dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 4))), "the first switch finds none ahead");
            for (long first : new long[] {8, 12, 16}) {
                String creator = io.creator.get(dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", first)));
                assertTrue(creator.startsWith("varve-maplog-parts"), "part " + first + " created by " + creator);
            }
            readBack(log, 13);
        }
        assertFalse(Files.exists(dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 16))), "the part created ahead, unused, is deleted at close");
        try (MaplogFile log = open(path, Kind.MAPPINGS, 4, MaplogFile.Missing.CORRUPT)) {
            assertEquals(13, log.count());
            log.checkDurable(13);
            readBack(log, 13);
        }
    }

    /**
     * After a crash a part created ahead is a part of no entries after one that is not full: set aside at open, like a
     * part past one a power loss left short, and deleted by the recovery cut; the entries before it all read back.
     */
    @Test
    void aPartCreatedAheadFoundAfterACrashIsSetAsideAndCut() throws Exception {
        Path path = dir.resolve("maplog-L0.log");
        Path crashed = Files.createDirectory(dir.resolve("crashed"));
        CreatorIO io = new CreatorIO();
        try (MaplogFile log = new MaplogFile(io, path, Kind.MAPPINGS, 0, NODE, 4, MaplogFile.Missing.CREATE)) {
            fill(log, 6); // parts at 0 and 4 (two entries), 8 created ahead
            awaitCreated(io, dir.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 8)));
            try (var files = Files.list(dir)) { // the files as a kill -9 now would leave them
                for (Path p : (Iterable<Path>) files::iterator) if (Files.isRegularFile(p)) Files.copy(p, crashed.resolve(p.getFileName()));
            }
        }
        Path ahead = crashed.resolve(MaplogDescriptor.partFileName("maplog-L0.log", 8));
        assertTrue(Files.exists(ahead));
        try (MaplogFile log = open(crashed.resolve("maplog-L0.log"), Kind.MAPPINGS, 4, MaplogFile.Missing.CORRUPT)) {
            assertEquals(6, log.count());
            log.checkDurable(6);
            log.truncate(6);
            assertFalse(Files.exists(ahead), "the recovery cut deletes it");
            readBack(log, 6);
            for (int i = 6; i < 10; i++) log.append(i, 10L * i, 100L * i);
            log.force(); // the log goes on past it: part 8 made again, with its entries
            readBack(log, 10);
        }
    }

    private static void readBack(MaplogFile log, int n) {
        long[] a = new long[n];
        long[] b = new long[n];
        log.read(0, n, a, b, null);
        for (int i = 0; i < n; i++) {
            assertEquals(i, a[i]);
            assertEquals(10L * i, b[i]);
        }
    }

    /** Waits until {@code part} is created (renamed into place) and its creator has let it go. */
    private static void awaitCreated(CreatorIO io, Path part) throws InterruptedException {
        while (!io.creator.containsKey(part)) Thread.sleep(1);
    }

    /** The standard factory, recording which thread created each file (renamed it into place, as durable creation does). */
    private static final class CreatorIO extends ForwardingFileIOFactory {
        final Map<Path, String> creator = new ConcurrentHashMap<>();

        @Override
        public void atomicMove(Path from, Path to) throws IOException {
            super.atomicMove(from, to);
            creator.put(to, Thread.currentThread().getName());
        }
    }

    @Test
    void aMissingLogIsCreatedOnlyForANewArchive() {
        Path path = dir.resolve("drops.log");
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(path, Kind.DROPS, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT));
        assertEquals(path, e.file());
        try (MaplogFile log = open(path, Kind.DROPS, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE)) {
            assertEquals(0, log.count());
        }
    }

    /**
     * A log's parts hold descriptors only while appended to, unforced or among the few used lately: under the default
     * retention a store keeps every part, and with one descriptor each a store with a long history ran out of them.
     */
    @Test
    void descriptorsStayBoundedWhateverTheNumberOfParts() throws IOException {
        final int held = 1 + 4 + 1; // the last part, the log's budget of parts before it, and the next part being created ahead
        Path path = dir.resolve("many.log");
        CountingIO io = new CountingIO();
        int parts = 200;
        try (MaplogFile log = new MaplogFile(io, path, Kind.MAPPINGS, 0, NODE, NODE, MaplogFile.Missing.CREATE)) {
            for (int p = 0; p < parts; p++) {
                for (int i = 0; i < NODE; i++) log.append(p * NODE + i, p, i);
                log.force();
                assertTrue(io.open <= held, "descriptors open after part " + p + ": " + io.open);
            }
            readEveryEntry(log, parts * NODE);
            assertTrue(io.open <= held, "descriptors open after reading every part: " + io.open);
        }
        assertEquals(0, io.open, "descriptors open after close");
        io.most = 0;
        try (MaplogFile log = new MaplogFile(io, path, Kind.MAPPINGS, 0, NODE, NODE, MaplogFile.Missing.CORRUPT)) {
            assertTrue(io.most <= held + 1, "descriptors open at once while opening " + parts + " parts: " + io.most);
            assertEquals(parts * NODE, log.count());
            readEveryEntry(log, parts * NODE);
            assertTrue(io.open <= held, "descriptors open after reading every part: " + io.open);
            for (int i = 0; i < NODE / 2; i++) log.append(parts * NODE + i, parts, i);
            log.force();
            log.truncate(parts * NODE - NODE / 2); // into the part before the last: it is opened again to be cut
            assertEquals(parts * NODE - NODE / 2, log.count());
        }
        assertEquals(0, io.open, "descriptors open after close");
    }

    private static void readEveryEntry(MaplogFile log, int n) {
        long[] a = new long[NODE / 2];
        long[] b = new long[NODE / 2];
        long[] c = new long[NODE / 2];
        for (int at = 0; at < n; at += NODE / 2) { // half a part a read: each part is read twice
            log.read(at, NODE / 2, a, b, c);
            for (int i = 0; i < NODE / 2; i++) {
                assertEquals(at + i, a[i]);
                assertEquals((at + i) / NODE, b[i]);
                assertEquals((at + i) % NODE, c[i]);
            }
        }
    }

    /** The standard factory, counting the files open through it. */
    private static final class CountingIO extends ForwardingFileIOFactory {
        volatile int open;
        int most;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            synchronized (this) { // parts ahead are created on a thread of their own
                most = Math.max(most, ++open);
            }
            return new ForwardingFileIO(f) {
                private boolean closed;

                @Override
                public void close() throws IOException {
                    synchronized (CountingIO.this) {
                        if (!closed) open--;
                        closed = true;
                    }
                    delegate.close();
                }
            };
        }
    }
}
