package dev.varve.config;

/**
 * How a crash in the middle of a checkpoint is repaired, i.e. where the before- or after-images of
 * the pages being checkpointed are kept so that a torn page write cannot corrupt the page store.
 */
public enum RecoveryMode {
    /** Full page images are written to the WAL before pages are checkpointed; recovery replays them. */
    WAL_PHYSICAL,
    /** Pages being checkpointed are first written to a per-checkpoint recovery file, not the WAL. */
    CHECKPOINT_RECOVERY_FILE
}
