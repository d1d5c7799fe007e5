"""Event-camera data: tonic-compatible event arrays, a synthetic event camera, a labelled
moving-shapes data set, binning into frames or time steps, and HDF5 storage read through a
torch Dataset. ``arrays`` (event arrays and their validation), ``binning`` (frames and time
steps), ``camera`` (the synthetic camera and data set), ``storage`` (HDF5).
"""

from hybridai.events.arrays import EVENT_DTYPE, check_events, check_sensor_size, make_events
from hybridai.events.binning import ToTimeSteps, to_frames
from hybridai.events.camera import DIRECTIONS, SHAPES, EventCamera, linlog, moving_shapes, render_shape
from hybridai.events.storage import EventDataset, EventFileError, EventWriter, pad_collate, save_events

__all__ = [
    "DIRECTIONS",
    "EVENT_DTYPE",
    "SHAPES",
    "EventCamera",
    "EventDataset",
    "EventFileError",
    "EventWriter",
    "ToTimeSteps",
    "check_events",
    "check_sensor_size",
    "linlog",
    "make_events",
    "moving_shapes",
    "pad_collate",
    "render_shape",
    "save_events",
    "to_frames",
]
