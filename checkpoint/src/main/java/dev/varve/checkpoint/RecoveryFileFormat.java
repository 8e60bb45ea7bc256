package dev.varve.checkpoint;

/**
 * Layout of a checkpoint recovery file (one per checkpoint thread): the image of every page of the checkpoint at
 * its mark, written and fsynced before the start marker (I3), so torn page writes can be repaired.
 *
 * <pre>
 * header:  0 magic (8) | 8 version (4) | 12 checkpointId (8) | 20 pageSize (4) | 24 crc32c of [0,24) (4)   = 28 bytes
 * entry:   0 pageId (8) | 8 codec (1) | 9 length (4) | 13 crc32c (4) | 17 payload (length bytes)
 *          crc32c covers pageId, codec, length and the payload
 * </pre>
 * The start marker records how many entries and bytes each file holds, so a short file is caught too.
 * Format versions: 1 — initial layout.
 */
final class RecoveryFileFormat {
    static final long MAGIC = 0x5641525645524631L; // "VARVERF1"
    static final int VERSION = 1;
    static final int HEADER_BYTES = 28;
    static final int ENTRY_HEADER_BYTES = 17;
    static final int ENTRY_CRC_OFFSET = 13;

    private RecoveryFileFormat() {
    }
}
