"""ament_python / pip setup for itasc_ros."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "itasc_ros"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["py.typed"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
        (f"share/{PACKAGE}/rviz", glob("rviz/*.rviz")),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy",
        "numba",
        "scipy",
        "urdfdom-py",
        "lxml",
        "pyyaml",
        "rosbags>=0.11",
        "matplotlib",
        "coal",
        "mujoco",  # itasc_sim_robot's physics:=mujoco, the demo's video
        "pillow",  # the demo's video (matplotlib's own dependency, imported by us too)
    ],
    extras_require={
        # Real rclpy + Fast DDS + messages as wheels, for machines without a ROS install.
        "ros": [
            "ros-rclpy",
            "ros-rmw-fastrtps-cpp",
            "ros-geometry-msgs",
            "ros-nav-msgs",
            "ros-sensor-msgs",
            "ros-std-msgs",
            "ros-std-srvs",
            "ros-trajectory-msgs",
            "ros-visualization-msgs",
            "ros-diagnostic-msgs",
        ],
        # The same for ROS 2 Jazzy (rclpy 7.1): its wheels are named ros-jazzy-<package>.
        "jazzy": [
            "ros-jazzy-rclpy",
            "ros-jazzy-rmw-fastrtps-cpp",
            "ros-jazzy-geometry-msgs",
            "ros-jazzy-nav-msgs",
            "ros-jazzy-sensor-msgs",
            "ros-jazzy-std-msgs",
            "ros-jazzy-std-srvs",
            "ros-jazzy-trajectory-msgs",
            "ros-jazzy-visualization-msgs",
            "ros-jazzy-diagnostic-msgs",
        ],
        # The launch file processes xacro description files in Python.
        "launch": ["xacro"],
        "test": [
            "pytest",
            "pytest-xdist",
            "xacro",
            "hypothesis",
            "pin",
            "example-robot-data",
            "ruff",
            "mypy",
            "colcon-core",
            "colcon-ros",
            "ros-ament-package",
            "wheel",  # test_packaging builds the package's wheel (setuptools < 70.1 needs it)
        ],
        # make docs: the Sphinx site of doc/ (the layout rosdoc2 builds for docs.ros.org)
        "docs": ["sphinx==9.0.4", "myst-parser==5.2.0", "sphinx-rtd-theme==3.1.0"],
    },
    zip_safe=True,
    maintainer="itasc_ros developers",
    maintainer_email="itasc-ros@example.org",
    description="iTaSC constraint-based velocity IK node for ROS 2",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "itasc_node = itasc_ros.ros.itasc_node:main",
            "itasc_sim_robot = itasc_ros.tools.sim_robot:main",
            "itasc-demo = itasc_ros.tools.demo:main",
            "itasc-record = itasc_ros.tools.record:main",
            "itasc-replay = itasc_ros.tools.replay:main",
            "itasc-ik = itasc_ros.tools.ik:main",
        ],
    },
)
