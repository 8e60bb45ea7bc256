package dev.varve.core.wal;

import dev.varve.config.WalSyncMode;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * How the records of one WAL segment are judged: where they stop, and whether a stop is a clean end, a torn tail
 * that may be cut or damage that is refused, by the rules {@link WalOpenScan} sets out. The open's scan, the offline
 * check ({@link WalFileCheck}) and the choice of a durable copy ({@link WalSegmentCopy}) judge a segment through here,
 * so open and verify agree; the reader ({@link WalReader}) finds the records after damage by the same test.
 */
final class WalRecordScan {
    private WalRecordScan() {
    }

    /**
     * Where the records of one segment stop, why if not at a clean end, and, when that is damage rather than a torn
     * tail, what shows it ({@code evidence}, null for a torn tail); {@code records} valid records came before the
     * stop. The offline check ({@link WalFileCheck}) reads segments by the same rule, so verify and open agree.
     */
    record Stop(int offset, String reason, String evidence, boolean sealed, long records) {
        Stop(int offset, String reason, String evidence) {
            this(offset, reason, evidence, false, 0);
        }
    }

    /**
     * A segment that is not the newest whose records end (zeros to its end) without its seal: every such segment was
     * sealed and forced whole before its successor got its name, so records of it are gone — damage, not a torn tail.
     */
    static Stop unsealed(Stop clean, long index) {
        return new Stop(clean.offset(), "the records end without the seal naming segment " + (index + 1),
                "a later segment exists, so this one was sealed and forced whole before it", false, clean.records());
    }

    /**
     * Validates the records of the segment {@code w} reads from {@code off}, by the rule of {@code mode}, the one that
     * wrote the segment ({@link WalSegmentDescriptor#judgedUnder}). A bad record is damage when a later segment exists
     * ({@code durable}), when a valid record follows it (unless, under {@code FSYNC}, it has the shape of a power cut's
     * tear, {@link #tornByPowerLoss}), or when it has a length and the mode does not run with unforced records;
     * otherwise it is a torn tail. Each valid record is noted in {@code types}.
     */
    static Stop scanRecords(WalSegmentWindow w, int off, boolean durable, WalSyncMode mode, CRC32C crc, ScannedTypes types) {
        return scanRecords(w, off, durable, mode, mode == WalSyncMode.FSYNC, crc, types);
    }

    /**
     * {@link #scanRecords(WalSegmentWindow, int, boolean, WalSyncMode, CRC32C, ScannedTypes)} where
     * {@code sectorTears} says the segment's records reached it by {@code pwrite}s a power cut may leave with sectors
     * unwritten ({@link #tornByPowerLoss}): FSYNC's segments, and a segment's durable copy ({@link WalSegmentCopy}),
     * whose records are otherwise judged by the mode that wrote them.
     */
    static Stop scanRecords(WalSegmentWindow w, int off, boolean durable, WalSyncMode mode, boolean sectorTears, CRC32C crc,
                            ScannedTypes types) {
        int size = (int) w.segmentSize();
        boolean sealed = false;
        long records = 0;
        while (off < size) {
            int length = w.length(off);
            String bad;
            if (length == 0) {
                if (w.isZero(off, size)) return new Stop(off, null, null, sealed, records);
                bad = "zero record length followed by non-zero bytes";
            } else {
                bad = w.checkRecord(off, crc);
            }
            if (bad != null) {
                String evidence = durable ? "a later segment exists, so this one was forced whole before it"
                        : sectorTears && tornByPowerLoss(w, off) ? null
                        : validRecordAfter(w, off, crc) ? "a valid record follows it"
                        : length != 0 && mode != WalSyncMode.FSYNC ? "the record's length is written last, so "
                                + "under " + mode + " a crash leaves no record with a length but a bad body"
                        : null;
                return new Stop(off, bad, evidence, false, records);
            }
            records++;
            ByteBuffer b = w.cover(off, length); // held already: checkRecord read it whole
            int at = off - w.base();
            int type = b.get(at + WalSegmentDescriptor.TYPE_OFFSET) & 0xFF;
            sealed = type == WalSegmentDescriptor.SEAL_TYPE;
            types.saw(b, at, type);
            off += WalSegmentDescriptor.aligned(length);
        }
        return new Stop(off, null, null, sealed, records);
    }

    /** Sector size of the disk's atomic writes, the unit a power cut keeps or loses. */
    private static final int SECTOR = 512;

    /**
     * Whether a power cut during the last commit's fsync (under {@code FSYNC}) can explain the bad record at
     * {@code off}. That commit's range reaches the file in one write ({@link WalSegment#force}) before one fdatasync,
     * so after power loss each of its 512-byte sectors may hold the write or not — and records after the bad one may
     * be whole. A sector that never reached the disk reads as the zeros the segment was created (or a cut was) with:
     * so such a record has a zero length, or a sector-aligned stretch of it that reads all zeros. A flipped bit or
     * garbage has neither shape and stays damage when records follow it.
     */
    static boolean tornByPowerLoss(WalSegmentWindow w, int off) {
        int length = w.length(off);
        if (length == 0) return true;
        if (WalSegmentDescriptor.badLength(length, off, w.segmentSize()) != null) return false; // no write had this length
        int end = off + length;
        for (int s = off & -SECTOR; s < end; s += SECTOR) {
            if (w.isZero(Math.max(s, off), Math.min(s + SECTOR, end))) return true;
        }
        return false;
    }

    /** True when a whole, valid record starts at some aligned offset after {@code off}: what follows was written. */
    private static boolean validRecordAfter(WalSegmentWindow w, int off, CRC32C crc) {
        return nextValidRecord(w, off, crc) >= 0;
    }

    /** The first aligned offset after {@code off} where a whole, valid record starts; -1 when none does. */
    static int nextValidRecord(WalSegmentWindow w, int off, CRC32C crc) {
        long size = w.segmentSize();
        for (int p = off + WalSegmentDescriptor.RECORD_ALIGNMENT; p + WalSegmentDescriptor.RECORD_HEADER_SIZE <= size;
             p += WalSegmentDescriptor.RECORD_ALIGNMENT) {
            // the LSN field equal to the position is a cheap filter before the CRC
            ByteBuffer b = w.cover(p, WalSegmentDescriptor.RECORD_HEADER_SIZE);
            if (b.getLong(p - w.base() + WalSegmentDescriptor.LSN_OFFSET) == WalSegmentDescriptor.lsn(w.index(), p, size)
                    && w.checkRecord(p, crc) == null) {
                return p;
            }
        }
        return -1;
    }
}
