package dev.varve.cli;

import dev.varve.engine.TableOptions;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;

/**
 * The file {@code varve dump} writes and {@code varve load} reads: every entry of some tables, losslessly, with each
 * table's placement and partition count, and for a caller-placed table the partition of every entry (its keys may
 * repeat across partitions).
 *
 * <pre>
 * "VARVEDMP" (8) | version (int, 2)
 * then per table:  'T' | name (modified UTF-8) | partitions (int) | placement (byte: 'H' by key hash, 'C' by caller)
 *     per entry:   'E' | key length (int) | key | value length (int) | value                    (hash-placed table)
 *              or  'P' | partition (int) | key length (int) | key | value length (int) | value  (caller-placed table)
 * end:             'Z' | entries (long) | CRC32C of every byte before it (int)
 * </pre>
 * Big-endian, as {@link DataOutputStream} writes. Version 1 had no placement byte and only 'E' entries (every table
 * hash-placed); it is still read. A reader checks the whole file before a load writes anything.
 */
final class DumpFile {
    private static final byte[] MAGIC = "VARVEDMP".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final int VERSION = 2;
    /** The version before placement was recorded. */
    private static final int VERSION_HASH_PLACED_ONLY = 1;
    private static final int MAX_KEY_BYTES = 1 << 16;
    private static final int MAX_VALUE_BYTES = 1 << 20;

    /** Receives the content of a dump. */
    interface Visitor {
        void table(String name, TableOptions options) throws IOException;

        /** An entry of the last table: {@code partition} is its partition in a caller-placed table, -1 in a hash-placed one. */
        void entry(int partition, byte[] key, byte[] value) throws IOException;
    }

    private DumpFile() {
    }

    /**
     * Writes a dump; {@link #end} finishes it and only then gives it its name ({@link StagedFile}): a dump cut short,
     * killed included, never leaves a file under that name that could be taken for a whole one.
     */
    static final class Writer implements AutoCloseable {
        private final StagedFile file;
        private final CheckedOutputStream checked;
        private final DataOutputStream out;
        private long entries;

        Writer(Path target) throws IOException {
            this.file = StagedFile.create(target);
            OutputStream os = new BufferedOutputStream(file.stream(), 1 << 16);
            this.checked = new CheckedOutputStream(os, new CRC32C());
            this.out = new DataOutputStream(checked);
            out.write(MAGIC);
            out.writeInt(VERSION);
        }

        void table(String name, TableOptions options) throws IOException {
            out.writeByte('T');
            out.writeUTF(name);
            out.writeInt(options.partitions());
            out.writeByte(options.callerPlaced() ? 'C' : 'H');
        }

        /** An entry of a hash-placed table. */
        void entry(byte[] key, byte[] value) throws IOException {
            out.writeByte('E');
            keyAndValue(key, value);
        }

        /** An entry of partition {@code partition} of a caller-placed table. */
        void entry(int partition, byte[] key, byte[] value) throws IOException {
            out.writeByte('P');
            out.writeInt(partition);
            keyAndValue(key, value);
        }

        private void keyAndValue(byte[] key, byte[] value) throws IOException {
            out.writeInt(key.length);
            out.write(key);
            out.writeInt(value.length);
            out.write(value);
            entries++;
        }

        long entries() {
            return entries;
        }

        /** Writes the end record and its checksum, forces the file to disk and gives it its name. */
        void end() throws IOException {
            out.writeByte('Z');
            out.writeLong(entries);
            out.flush();
            out.writeInt((int) checked.getChecksum().getValue());
            out.flush();
            file.commit();
        }

        /** Closes the file; without {@link #end} the unfinished dump is deleted. */
        @Override
        public void close() throws IOException {
            try {
                out.close();
            } finally {
                file.close();
            }
        }
    }

    /**
     * Reads {@code file} to {@code v} (null: only checks it); returns the entries.
     *
     * @throws IOException naming the offset when the file is not a complete, intact dump
     */
    static long read(Path file, Visitor v) throws IOException {
        if (!Files.isRegularFile(file)) throw new IllegalArgumentException(file + (Files.exists(file) ? " is not a file" : " does not exist"));
        try (InputStream is = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            CountingCheckedInput in = new CountingCheckedInput(is);
            DataInputStream d = new DataInputStream(in);
            byte[] magic = new byte[MAGIC.length];
            d.readFully(magic);
            if (!Arrays.equals(magic, MAGIC)) throw new IOException(file + " is not a varve dump (bad magic)");
            int version = d.readInt();
            if (version != VERSION && version != VERSION_HASH_PLACED_ONLY)
                throw new IOException(file + ": unsupported dump version " + version);
            long entries = 0;
            TableOptions table = null; // of the last 'T' record
            while (true) {
                long at = in.count;
                int tag = d.readUnsignedByte();
                if (tag == 'T') {
                    String name = d.readUTF();
                    int partitions = d.readInt();
                    int placement = version == VERSION_HASH_PLACED_ONLY ? 'H' : d.readUnsignedByte();
                    table = options(partitions, placement, file, at);
                    if (v != null) v.table(name, table);
                } else if (table != null && tag == (table.callerPlaced() ? 'P' : 'E')) { // the entry kind of the last table
                    int partition = -1;
                    if (tag == 'P') {
                        partition = d.readInt();
                        if (partition < 0 || partition >= table.partitions())
                            throw new IOException(file + ": partition " + partition + " of a table of " + table.partitions()
                                    + " partitions in the record at offset " + at);
                    }
                    byte[] key = bytes(d, MAX_KEY_BYTES, file, at);
                    byte[] value = bytes(d, MAX_VALUE_BYTES, file, at);
                    if (v != null) v.entry(partition, key, value);
                    entries++;
                } else if (tag == 'Z') {
                    long n = d.readLong();
                    int crc = (int) in.getChecksum().getValue();
                    int stored = d.readInt();
                    if (n != entries) throw new IOException(file + ": end record counts " + n + " entries, the file holds " + entries);
                    if (stored != crc) throw new IOException(file + ": checksum mismatch (the dump is damaged)");
                    if (d.read() != -1) throw new IOException(file + ": bytes after the end record");
                    return entries;
                } else {
                    throw new IOException(file + ": unexpected record tag " + tag + " at offset " + at);
                }
            }
        } catch (EOFException e) {
            throw new IOException(file + " is truncated (no end record)", e);
        }
    }

    private static TableOptions options(int partitions, int placement, Path file, long at) throws IOException {
        if (partitions < 1 || partitions > TableOptions.MAX_PARTITIONS)
            throw new IOException(file + ": implausible partition count " + partitions + " in the table record at offset " + at);
        if (placement == 'H') return TableOptions.hashPlaced(partitions);
        if (placement == 'C') return TableOptions.callerPlaced(partitions);
        throw new IOException(file + ": unknown placement " + placement + " in the table record at offset " + at);
    }

    private static byte[] bytes(DataInputStream d, int max, Path file, long at) throws IOException {
        int n = d.readInt();
        if (n < 0 || n > max) throw new IOException(file + ": implausible length " + n + " in the record at offset " + at);
        byte[] b = new byte[n];
        d.readFully(b);
        return b;
    }

    /** Checksums and counts what is read (the end record's own checksum is read after taking the value). */
    private static final class CountingCheckedInput extends CheckedInputStream {
        long count;

        CountingCheckedInput(InputStream in) {
            super(in, new CRC32C());
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) count++;
            return b;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws IOException {
            int n = super.read(buf, off, len);
            if (n > 0) count += n;
            return n;
        }
    }
}
