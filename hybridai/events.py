"""Event-camera data: tonic-compatible event arrays, a synthetic event camera, a labelled
moving-shapes data set, binning into frames or time steps, and HDF5 storage read through a
torch Dataset. The code lives in ``hybridai.spiking``; this module is its public face.
"""

from .spiking.event_camera import DIRECTIONS, SHAPES, EventCamera, linlog, moving_shapes, render_shape
from .spiking.event_storage import EventDataset, EventWriter, pad_collate, save_events
from .spiking.events import EVENT_DTYPE, ToTimeSteps, check_events, check_sensor_size, make_events, to_frames

__all__ = [
    "DIRECTIONS",
    "EVENT_DTYPE",
    "SHAPES",
    "EventCamera",
    "EventDataset",
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
