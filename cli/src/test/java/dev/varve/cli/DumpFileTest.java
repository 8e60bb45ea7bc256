package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.engine.TableOptions;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DumpFile}: placement and each caller-placed entry's partition survive a round trip, a version-1 dump (no
 * placement, every table hash-placed) still reads, and records that contradict their table are refused with the offset.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class DumpFileTest {
    @TempDir
    Path tmp;

    /** What a read delivered, one line per call. */
    private static List<String> read(Path file) throws IOException {
        List<String> seen = new ArrayList<>();
        DumpFile.read(file, new DumpFile.Visitor() {
            @Override
            public void table(String name, TableOptions options) {
                seen.add(name + " " + options);
            }

            @Override
            public void entry(int partition, byte[] key, byte[] value) {
                seen.add(partition + ":" + new String(key, StandardCharsets.UTF_8) + "=" + new String(value, StandardCharsets.UTF_8));
            }
        });
        return seen;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void placementAndPartitionsRoundTrip() throws IOException {
        Path file = tmp.resolve("d");
        try (DumpFile.Writer w = new DumpFile.Writer(file)) {
            w.table("grid", TableOptions.callerPlaced(3));
            w.entry(0, utf8("k"), utf8("zero"));
            w.entry(2, utf8("k"), utf8("two"));
            w.table("plain", TableOptions.hashPlaced(5));
            w.entry(utf8("a"), utf8("b"));
            w.end();
        }
        assertEquals(List.of("grid " + TableOptions.callerPlaced(3), "0:k=zero", "2:k=two", "plain " + TableOptions.hashPlaced(5), "-1:a=b"),
                read(file));
    }

    /** A dump written by hand: magic, {@code version}, then {@code body}, then the end record over {@code entries}. */
    private Path crafted(int version, long entries, Body body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.write(utf8("VARVEDMP"));
        out.writeInt(version);
        body.write(out);
        out.writeByte('Z');
        out.writeLong(entries);
        CRC32C crc = new CRC32C();
        crc.update(bytes.toByteArray());
        out.writeInt((int) crc.getValue());
        Path file = tmp.resolve("crafted");
        Files.write(file, bytes.toByteArray());
        return file;
    }

    private interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    /** A version-2 table record. */
    private static void table(DataOutputStream out, String name, int partitions, char placement) throws IOException {
        out.writeByte('T');
        out.writeUTF(name);
        out.writeInt(partitions);
        out.writeByte(placement);
    }

    private static void entry(DataOutputStream out, String key, String value) throws IOException {
        out.writeInt(key.length());
        out.write(utf8(key));
        out.writeInt(value.length());
        out.write(utf8(value));
    }

    @Test
    void aVersionOneDumpReadsAsHashPlacedTables() throws IOException {
        Path file = crafted(1, 1, out -> {
            table(out, "old", 4, 'E');
            entry(out, "k", "v");
        });
        assertEquals(List.of("old " + TableOptions.hashPlaced(4), "-1:k=v"), read(file));
    }

    @Test
    void recordsThatContradictTheirTableAreRefusedWithTheirOffset() throws IOException {
        int tableAt = 12; // after magic and version
        int entryAt = tableAt + 1 + 2 + "grid".length() + 4 + 1;
        Path outOfRange = crafted(2, 1, out -> {
            table(out, "grid", 3, 'C');
            out.writeByte('P');
            out.writeInt(3);
            entry(out, "k", "v");
        });
        IOException e = assertThrows(IOException.class, () -> read(outOfRange));
        assertTrue(e.getMessage().contains("partition 3 of a table of 3 partitions in the record at offset " + entryAt), e.getMessage());

        Path unplaced = crafted(2, 1, out -> {
            table(out, "grid", 3, 'C');
            out.writeByte('E'); // an entry with no partition in a caller-placed table
            entry(out, "k", "v");
        });
        e = assertThrows(IOException.class, () -> read(unplaced));
        assertTrue(e.getMessage().contains("unexpected record tag " + (int) 'E' + " at offset " + entryAt), e.getMessage());

        Path placedInHash = crafted(2, 1, out -> {
            table(out, "grid", 3, 'H');
            out.writeByte('P');
            out.writeInt(1);
            entry(out, "k", "v");
        });
        e = assertThrows(IOException.class, () -> read(placedInHash));
        assertTrue(e.getMessage().contains("unexpected record tag " + (int) 'P' + " at offset " + entryAt), e.getMessage());

        Path badPlacement = crafted(2, 0, out -> {
            table(out, "grid", 3, 'X');
        });
        e = assertThrows(IOException.class, () -> read(badPlacement));
        assertTrue(e.getMessage().contains("unknown placement " + (int) 'X' + " in the table record at offset " + tableAt), e.getMessage());

        Path noPartitions = crafted(2, 0, out -> {
            table(out, "grid", 0, 'H');
        });
        e = assertThrows(IOException.class, () -> read(noPartitions));
        assertTrue(e.getMessage().contains("implausible partition count 0 in the table record at offset " + tableAt), e.getMessage());
    }

    @Test
    void aDumpHasItsNameOnlyOnceEndedAndOneCutShortLeavesNothing() throws IOException {
        Path file = tmp.resolve("d");
        try (DumpFile.Writer w = new DumpFile.Writer(file)) {
            w.table("plain", TableOptions.hashPlaced(1));
            w.entry(utf8("a"), utf8("b"));
            assertTrue(Files.notExists(file), "the name is given before the dump is whole");
            w.end();
        }
        assertEquals(List.of("plain " + TableOptions.hashPlaced(1), "-1:a=b"), read(file));
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(List.of(file), s.toList(), "the temporary file is gone once renamed");
        }

        Path cut = tmp.resolve("cut");
        try (DumpFile.Writer w = new DumpFile.Writer(cut)) {
            w.table("plain", TableOptions.hashPlaced(1));
            w.entry(utf8("a"), utf8("b")); // and no end: an error cut the dump short
        }
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(List.of(file), s.toList(), "a dump cut short leaves no file");
        }
    }
}
